"""DP-SGD accounting report: RDP, PLD, mu-GDP and regret (papers/caps.md, Table 1)."""

from __future__ import annotations

import math

import pytest

from skdpsynth.privacy import dpsgd_privacy_report
from skdpsynth.privacy._dpsgd import (
    calibrate_noise_multiplier,
    dpsgd_accounting_table,
    gdp_delta,
    gdp_epsilon,
    pld_epsilon,
    rdp_epsilon,
)

pytestmark = pytest.mark.requires("opacus", "dp_accounting", "gdpnum")  # an extra


@pytest.fixture(scope="module")
def reference_report():
    # the example of Gomez et al. (2025) quoted in METHODS.md
    return dpsgd_privacy_report(noise_multiplier=9.4, sample_rate=0.328, steps=2000, delta=1e-5)


def test_reference_mu_and_regret(reference_report):
    assert reference_report["mu"] == pytest.approx(1.5686, abs=1e-3)
    assert reference_report["regret"] == pytest.approx(0.00102, abs=5e-5)
    assert reference_report["regret"] < 1e-2


def test_pld_is_tighter_than_rdp_and_gdp(reference_report):
    r = reference_report
    assert r["epsilon_pld"] <= r["epsilon_rdp"]
    # the mu-GDP curve lies below the true tradeoff curve, so its epsilon bounds the tight one
    assert r["epsilon_pld"] <= gdp_epsilon(r["mu"], r["delta"]) + 1e-6
    assert r["epsilon_gdp"] == pytest.approx(gdp_epsilon(r["mu"], r["delta"]))
    # and the numbers are those of the accountants called directly
    assert r["epsilon_rdp"] == pytest.approx(rdp_epsilon(noise_multiplier=9.4, sample_rate=0.328, steps=2000,
                                                         delta=1e-5))
    assert r["epsilon_pld"] == pytest.approx(pld_epsilon(noise_multiplier=9.4, sample_rate=0.328, steps=2000,
                                                         delta=1e-5))


def test_gdp_conversion_known_values():
    # delta(eps) of mu-GDP is decreasing in eps; the inverse round-trips
    mu = 0.35
    eps = gdp_epsilon(mu, 1e-3)
    assert gdp_delta(mu, eps) == pytest.approx(1e-3, rel=1e-6)
    assert eps == pytest.approx(0.883, abs=2e-3)  # METHODS.md: mu 0.35 -> 0.883 at delta 1e-3
    assert gdp_epsilon(1e-9, 1e-3) == 0.0


@pytest.mark.parametrize("eps", [pytest.param(0.5, marks=pytest.mark.slow), 1.0,
                                 pytest.param(4.0, marks=pytest.mark.slow)])  # each calibration: about 2 s
def test_calibration_hits_target_from_below(eps):
    sigma = calibrate_noise_multiplier(epsilon=eps, delta=1e-5, sample_rate=0.3, steps=100, verify_pld=True)
    got = rdp_epsilon(noise_multiplier=sigma, sample_rate=0.3, steps=100, delta=1e-5)
    assert eps - 0.011 <= got <= eps
    # a bit less noise would overspend
    assert rdp_epsilon(noise_multiplier=sigma * 0.97, sample_rate=0.3, steps=100, delta=1e-5) > got
    with pytest.raises(ValueError, match="epsilon"):
        calibrate_noise_multiplier(epsilon=0.0, delta=1e-5, sample_rate=0.3, steps=10)


def test_more_noise_less_privacy_loss():
    a = dpsgd_privacy_report(noise_multiplier=1.0, sample_rate=0.1, steps=100, delta=1e-5, grid_step=1e-3)
    b = dpsgd_privacy_report(noise_multiplier=2.0, sample_rate=0.1, steps=100, delta=1e-5, grid_step=1e-3)
    assert b["epsilon_rdp"] < a["epsilon_rdp"] and b["epsilon_pld"] < a["epsilon_pld"] and b["mu"] < a["mu"]


def test_bad_arguments():
    with pytest.raises(ValueError, match="sample_rate"):
        dpsgd_privacy_report(noise_multiplier=1.0, sample_rate=1.5, steps=10, delta=1e-5)
    with pytest.raises(ValueError, match="noise_multiplier"):
        dpsgd_privacy_report(noise_multiplier=-1.0, sample_rate=0.5, steps=10, delta=1e-5)
    with pytest.raises(ValueError, match="delta"):
        dpsgd_privacy_report(noise_multiplier=1.0, sample_rate=0.5, steps=10, delta=0.0)
    zero = dpsgd_privacy_report(noise_multiplier=1.0, sample_rate=0.5, steps=0, delta=1e-5)
    assert zero["epsilon_rdp"] == zero["epsilon_pld"] == zero["mu"] == 0.0


# Table 1 of the CAPS paper (delta = 1e-3): eps_RDP -> (eps tight, mu, regret). The paper does not publish the
# sample rate and steps (tuned per epsilon with Optuna). A search over sample rates {0.05, 0.1, 0.3} x steps
# {100, 200, 500, 1000} with RDP-calibrated noise (benchmarks/caps_cycles.py --accounting-only) finds settings
# that reproduce each row: eps 2 and 4 to within 0.04 in epsilon, 0.01 in mu and 1e-3 in regret; eps 1 only to
# 0.03 in epsilon (the paper's 0.83 needs fewer than 100 steps).
PAPER_TABLE_1 = {1.0: (0.83, 0.35, 0.43e-2), 2.0: (1.75, 0.63, 0.24e-2), 4.0: (3.49, 1.12, 0.96e-2)}
RECONSTRUCTED = {1.0: (0.1, 100), 2.0: (0.3, 200), 4.0: (0.1, 500)}


@pytest.mark.parametrize("eps_rdp", [1.0, 2.0, pytest.param(4.0, marks=pytest.mark.slow)])  # 4: 500 steps, 3 s
def test_paper_table_1_reconstruction(eps_rdp):
    eps_tight, mu, regret = PAPER_TABLE_1[eps_rdp]
    q, steps = RECONSTRUCTED[eps_rdp]
    sigma = calibrate_noise_multiplier(epsilon=eps_rdp, delta=1e-3, sample_rate=q, steps=steps,
                                       epsilon_tolerance=1e-3)
    r = dpsgd_privacy_report(noise_multiplier=sigma, sample_rate=q, steps=steps, delta=1e-3)
    assert eps_rdp - 1e-3 <= r["epsilon_rdp"] <= eps_rdp
    assert r["epsilon_pld"] == pytest.approx(eps_tight, abs=0.04)
    assert r["mu"] == pytest.approx(mu, abs=0.01)
    assert r["regret"] == pytest.approx(regret, abs=1e-3)
    assert r["epsilon_pld"] < r["epsilon_rdp"] and r["regret"] < 1.1e-2


def test_table_markdown(reference_report):
    table = dpsgd_accounting_table([reference_report])
    lines = table.splitlines()
    assert lines[0].startswith("| ε (RDP) | ε (PLD) | μ | Δ (regret)")
    assert "1.57" in lines[2] and "0.10·10⁻²" in lines[2]
    assert len(lines) == 3
    assert math.isfinite(reference_report["epsilon_gdp"])
