"""Attacks from the privacy review, run as an attacker would; each one succeeded on the first version.

The attacker holds the release, the pickled model, its parameters and next month's release. Attacks
specific to one synthesizer live beside it (NPGC's noise replay in test_npgc.py, CAPS's sample-rate
leak in test_caps.py, vocabulary discovery in test_markov.py, the ledger in test_ledger.py).
"""

from __future__ import annotations

import math
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from skdpsynth import DPMarginalsSynthesizer, TableSchema

SCHEMA = TableSchema.from_dict({
    "grade": {"kind": "integer", "lower": 0, "upper": 20},
    "course": {"kind": "categorical", "categories": ["math", "bio", "art"]},
})


def _table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"grade": rng.integers(0, 21, n), "course": rng.choice(["math", "bio", "art"], n)})


def _exact_counts(model, X) -> list[np.ndarray]:
    codes = model.grid_.encode(SCHEMA.validate(X))
    return [np.bincount(codes[:, j], minlength=g.n_cells) for j, g in enumerate(model.grid_.columns)]


def _replay_noise(victim, dummy: pd.DataFrame) -> list[np.ndarray]:
    """The attacker refits the victim's own parameters (and any seed found in its pickle) on data they know,
    and reads the noise that the fit added."""
    params = victim.get_params()
    seeds = [v for v in vars(victim).values() if isinstance(v, np.random.SeedSequence)]
    if seeds:  # the first version kept its root seed on the estimator, with the OS entropy in it
        params["random_state"] = np.random.SeedSequence(seeds[0].entropy)
    replay = clone(victim).set_params(**params).fit(dummy)
    return [c - e for c, e in zip(replay.counts_, _exact_counts(replay, dummy))]


@pytest.mark.parametrize("random_state", [None, 0])
def test_the_pickle_does_not_give_back_its_noise(random_state):
    X = _table(500, 1)
    victim = pickle.loads(pickle.dumps(
        DPMarginalsSynthesizer(epsilon=1.0, schema=SCHEMA, random_state=random_state).fit(X)))
    noise = _replay_noise(victim, _table(500, 2))
    recovered = [c - z for c, z in zip(victim.counts_, noise)]
    errors = np.concatenate([np.abs(r - e) for r, e in zip(recovered, _exact_counts(victim, X))])
    # the first version: max error 0.0 (every exact cell recovered); now the replayed noise is independent
    assert errors.max() > 0.5 and np.mean(errors > 0) > 0.5


def test_neighbouring_releases_with_one_seed_do_not_difference_out():
    X = _table(500, 3)
    Xminus = X.iloc[1:]  # next month's table: the first learner has left
    a = DPMarginalsSynthesizer(epsilon=1.0, schema=SCHEMA, random_state=0).fit(X)
    b = DPMarginalsSynthesizer(epsilon=1.0, schema=SCHEMA, random_state=0).fit(Xminus)
    diff = np.concatenate([ca - cb for ca, cb in zip(a.counts_, b.counts_)])
    removed = np.concatenate(_exact_counts(a, X)) - np.concatenate(_exact_counts(a, Xminus))
    # the first version: diff == removed exactly (a one-hot of the removed learner's record)
    assert not np.array_equal(diff, removed)


def test_reproducible_noise_is_an_opt_in_that_says_so():
    X = _table(500, 3)
    est = DPMarginalsSynthesizer(epsilon=1.0, schema=SCHEMA, random_state=0, reproducible_noise=True)
    a, b = clone(est).fit(X), clone(est).fit(X.iloc[1:])
    diff = np.concatenate([ca - cb for ca, cb in zip(a.counts_, b.counts_)])
    removed = np.concatenate(_exact_counts(a, X)) - np.concatenate(_exact_counts(a, X.iloc[1:]))
    assert np.array_equal(diff, removed)  # exactly why it is not publishable
    spent = a.privacy_spent_
    assert spent.reproducible_noise and not spent.publishable and spent.is_private
    assert all(r.noise == "reproducible" for r in a.budget_log_)
    with pytest.raises(ValueError, match="random_state"):
        DPMarginalsSynthesizer(schema=SCHEMA, reproducible_noise=True).fit(X)


def test_default_release_size_is_not_the_number_of_people():
    X = _table(3000, 4)
    sizes = {n: [len(DPMarginalsSynthesizer(epsilon=1.0, schema=SCHEMA).fit(X.iloc[:n]).sample())
                 for _ in range(15)] for n in (3000, 2999)}
    # the first version released exactly 3000 vs 2999 rows for neighbouring inputs
    assert sizes[3000] != [3000] * 15 and sizes[2999] != [2999] * 15
    assert min(sizes[3000]) <= max(sizes[2999])  # the two ranges overlap: the size does not single anyone out


@pytest.mark.parametrize("dtype", ["int64", "Int64"])
def test_one_missing_value_changes_neither_mechanism_nor_release_dtype(dtype):
    X = _table(400, 5).astype({"grade": dtype})
    Xna = X.copy()
    Xna["grade"] = Xna["grade"].astype("float64" if dtype == "int64" else "Int64")
    Xna.loc[0, "grade"] = None  # one learner's grade is missing
    fits = [DPMarginalsSynthesizer(epsilon=1.0, schema=SCHEMA).fit(t) for t in (X, Xna)]
    plans = [[(r.mechanism, r.target, r.noise_scale) for r in f.budget_log_] for f in fits]
    assert plans[0] == plans[1]
    dtypes = {str(f.sample(200, random_state=s)["grade"].dtype) for f in fits for s in range(5)}
    assert dtypes == {"Int64"}  # the first version: int64, Int64 or float64 depending on the input and the draw
    assert fits[0].dtypes_ == fits[1].dtypes_  # nor does the fitted estimator show it


def _fit_warnings(X, **params):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = DPMarginalsSynthesizer(schema=SCHEMA, **params).fit(X)
    return est, " ".join(str(w.message) for w in caught if "clipped" in str(w.message))


def test_clipping_is_counted_through_a_mechanism_not_printed():
    # the first version warned "clipped in column 'grade'" whenever one value was out of range: a neighbour with
    # one learner above the bound was told apart from the table without them every time
    X = _table(400, 6)
    X1 = X.copy()
    X1.loc[0, "grade"] = 99  # one learner above the public bound
    for table in (X, X1):
        est, text = _fit_warnings(table, epsilon=1.0)
        assert text == ""  # one value is far below the noise (scale 100 at 1 % of epsilon 1)
        (clip,) = [r for r in est.budget_log_ if "clipped to the public bounds" in r.target]
        assert clip.kind == "pure" and clip.sensitivity == 1.0 and math.isclose(clip.epsilon, 0.01)
        assert set(est.clip_counts_) == {"grade"} and est.clip_counts_["grade"] != 1.0  # noisy
    # a schema in the wrong units (most of the table clipped) is reported, with a noisy count only
    X2 = X.copy()
    X2.loc[:299, "grade"] = 99
    est, text = _fit_warnings(X2, epsilon=10.0)
    # the noisy count is shown (it rounds to the exact 300 in about 5 % of fits: Laplace scale 10)
    assert f"'grade' (about {est.clip_counts_['grade']:.0f} rows)" in text
    assert abs(est.clip_counts_["grade"] - 300) < 100  # Laplace scale 10 at 1 % of epsilon 10: P(miss) < 1e-4
    # without privacy the exact columns are named, as TableSchema.validate does
    _, text = _fit_warnings(X1, epsilon=None)
    assert "'grade'" in text
