"""Empirical privacy audit: a lower confidence bound on a synthesizer's epsilon (and mu) from many fits.

The audit fits the synthesizer many times on each of two neighbouring datasets
(with and without a canary person, :func:`make_neighbours`), scores every
release with a distinguishing attack (:class:`WhiteBoxAttack`,
:class:`BlackBoxAttack` or any callable), chooses the threshold test on one
part of the trials and measures its error rates on the rest, and turns them
into one-sided lower confidence bounds on epsilon and on mu (Gaussian DP)
(:mod:`skdpsynth.audit._privacy_bounds`). A bound above the synthesizer's
claim is a proof, at the stated confidence, that the claim is false; a bound
below it shows only what this attack could not refute.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone
from tqdm.auto import tqdm

from skdpsynth.audit._privacy_attacks import BlackBoxAttack, WhiteBoxAttack
from skdpsynth.audit._privacy_bounds import (
    ThresholdTest,
    epsilon_lower_bound,
    evaluate_test,
    mu_implied_by_epsilon,
    mu_lower_bound,
    select_test,
)
from skdpsynth.audit._privacy_canary import Neighbours, make_neighbours
from skdpsynth.utils._random import check_random_state

__all__ = ["PrivacyAuditResult", "audit_privacy", "claimed_mu"]

#: trials per joblib task (each task fits this many synthesizers)
_CHUNK = 50
#: the bound must exceed the claim by more than this to count as a violation (float noise)
_TOL = 1e-9


@dataclass(frozen=True)
class PrivacyAuditResult:
    """Outcome of :func:`audit_privacy`.

    Attributes
    ----------
    synthesizer : str
        Class name.
    attack : str
        ``"white-box"``, ``"black-box"`` or the callable's name.
    epsilon, delta : float
        The claim: the fitted synthesizer's ``privacy_spent_``.
    epsilon_lower : float
        One-sided lower confidence bound on epsilon (at ``delta``).
    mu_lower : float
        One-sided lower confidence bound on mu (Gaussian DP).
    mu_claimed : float or None
        For synthesizers whose every measurement is Gaussian: the mu of the noise
        actually added, ``sqrt(2 rho)`` for the composed rho (None otherwise).
    mu_implied : float or None
        For pure-DP claims (``delta == 0``): the largest mu lower bound any test
        can show against an epsilon-DP mechanism (:func:`mu_implied_by_epsilon`).
    trials : int
        Fits per neighbouring dataset.
    n_people : int
        People in the dataset with the canary.
    selection_trials : int
        Fits per dataset used to choose the tests (the rest measure them).
    fpr, fnr, fpr_upper, fnr_upper : float
        Error rates of the epsilon test on the measuring trials, and their joint
        Clopper-Pearson upper bounds.
    errors : dict
        ``{"epsilon": (false positives, false negatives), "mu": (...)}`` of the
        two tests on the ``trials - selection_trials`` measuring fits per dataset.
    epsilon_test, mu_test : ThresholdTest
        The tests chosen on the selection trials.
    confidence : float
        Level of both bounds (``1 - alpha``).
    publishable : bool
        The synthesizer's ``privacy_spent_.publishable`` (False with reproducible noise).
    seconds : float
        Wall time of the audit.
    scores_out, scores_in : numpy.ndarray
        The attack's score of every fit without / with the canary.
    """

    synthesizer: str
    attack: str
    epsilon: float
    delta: float
    epsilon_lower: float
    mu_lower: float
    mu_claimed: float | None
    mu_implied: float | None
    trials: int
    n_people: int
    selection_trials: int
    fpr: float
    fnr: float
    fpr_upper: float
    fnr_upper: float
    errors: dict
    epsilon_test: ThresholdTest
    mu_test: ThresholdTest
    confidence: float
    publishable: bool
    seconds: float
    scores_out: np.ndarray = field(repr=False)
    scores_in: np.ndarray = field(repr=False)

    @property
    def violation(self) -> bool:
        """True when a lower bound exceeds the claim (epsilon, or mu where a mu claim exists)."""
        return self._exceeds(self.epsilon_lower, self.mu_lower)

    def violation_at(self, alpha: float) -> bool:
        """:attr:`violation` for the bounds at level ``1 - alpha`` (:meth:`bounds_at`)."""
        return self._exceeds(*self.bounds_at(alpha))

    def _exceeds(self, epsilon_lower: float, mu_lower: float) -> bool:
        mu_claim = self.mu_claimed if self.mu_claimed is not None else self.mu_implied
        return bool(epsilon_lower > self.epsilon + _TOL or (mu_claim is not None and mu_lower > mu_claim + _TOL))

    def bounds_at(self, alpha: float) -> tuple[float, float]:
        """(epsilon, mu) lower bounds of the same tests at another level ``1 - alpha``.

        E.g. ``alpha / k`` for a claim about ``k`` audits at once (Bonferroni):
        a bound at level 0.95 exceeds the epsilon of a mechanism whose
        trade-off it tests tightly with probability up to 0.05.
        """
        m = self.trials - self.selection_trials
        (fp, fn), (mfp, mfn) = self.errors["epsilon"], self.errors["mu"]
        return (epsilon_lower_bound(fp, m, fn, m, delta=self.delta, alpha=alpha),
                mu_lower_bound(mfp, m, mfn, m, alpha=alpha))

    def to_dict(self, scores: bool = False) -> dict[str, Any]:
        """A JSON-friendly summary (the per-fit scores only when ``scores=True``)."""
        out = {k: v for k, v in asdict(self).items() if k not in ("scores_out", "scores_in")}
        out["violation"] = self.violation
        if scores:
            out["scores_out"], out["scores_in"] = self.scores_out.tolist(), self.scores_in.tolist()
        return out


def claimed_mu(fitted: Any) -> float | None:
    """The mu-GDP of a fit whose every measurement is a Gaussian mechanism, else None.

    A Gaussian mechanism of L2 sensitivity ``s`` and noise ``sigma`` is
    ``s / sigma``-GDP and ``rho = s^2 / (2 sigma^2)``-zCDP, and mu-GDP
    mechanisms compose as ``sqrt(sum mu_i^2)``, so the composition is
    ``sqrt(2 sum rho_i)``-GDP (the rho charged includes the widening of a
    public grid, so this is the mu of the noise actually added). Discrete
    Gaussian noise is treated as Gaussian.
    """
    records = [r for r in getattr(fitted, "budget_log_", ()) if r.kind != "none"]
    if not records or any(r.kind != "zcdp" or "gaussian" not in r.mechanism for r in records):
        return None
    return math.sqrt(2.0 * sum(r.rho for r in records))


def _with_public_domain(estimator: Any, neighbours: Neighbours) -> Any:
    """A clone with the neighbours' public domain set where the synthesizer has none."""
    est = clone(estimator)
    params = est.get_params(deep=False)
    public = {k: v for k, v in neighbours.public_params.items() if k in params and params[k] is None}
    return est.set_params(**public) if public else est


def _resolve_attack(attack: Any) -> Any:
    if isinstance(attack, str):
        attacks = {"white-box": WhiteBoxAttack, "black-box": BlackBoxAttack}
        if attack not in attacks:
            raise ValueError(f"attack must be 'white-box', 'black-box' or a callable, got {attack!r}.")
        return attacks[attack]()
    if not callable(attack):
        raise ValueError(f"attack must be 'white-box', 'black-box' or a callable, got {attack!r}.")
    return attack


def _attack_name(attack: Any) -> str:
    return getattr(attack, "name", None) or getattr(attack, "__name__", None) or type(attack).__name__


def _run_trials(estimator: Any, neighbours: Neighbours, attack: Any, worlds: np.ndarray) -> np.ndarray:
    """Fit once per entry of ``worlds`` (1: with the canary) and score each release."""
    scores = np.empty(len(worlds))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, canary_in in enumerate(worlds):
            fitted = clone(estimator).fit(neighbours.data(bool(canary_in)))
            scores[i] = float(attack(fitted, neighbours))
    return scores


def _score_all(estimator, neighbours, attack, trials, n_jobs, progress, rng) -> tuple[np.ndarray, np.ndarray]:
    worlds = np.tile([0, 1], trials)
    chunks = [worlds[i:i + _CHUNK] for i in range(0, len(worlds), _CHUNK)]
    jobs = (delayed(_run_trials)(estimator, neighbours, attack, c) for c in chunks)
    results = []
    with tqdm(total=len(worlds), desc=f"audit {type(estimator).__name__}", unit="fit", disable=not progress) as bar:
        parallel = Parallel(n_jobs=n_jobs, return_as="generator")
        for chunk, scores in zip(chunks, parallel(jobs)):
            results.append(scores)
            bar.update(len(chunk))
    scores = np.concatenate(results)
    out, inn = scores[worlds == 0], scores[worlds == 1]
    return rng.permutation(out), rng.permutation(inn)


def _claim(estimator: Any, neighbours: Neighbours) -> tuple[float, float, float | None, bool]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = clone(estimator).fit(neighbours.with_canary)
    spent = fitted.privacy_spent_
    return float(spent.epsilon), float(spent.delta), claimed_mu(fitted), bool(spent.publishable)


def _check_args(trials: int, selection_fraction: float, alpha: float) -> None:
    if not (isinstance(trials, (int, np.integer)) and trials >= 4):
        raise ValueError(f"trials must be an integer >= 4, got {trials!r}.")
    if not 0 < selection_fraction < 1:
        raise ValueError(f"selection_fraction must be in (0, 1), got {selection_fraction!r}.")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}.")


def audit_privacy(estimator: Any, *, attack: Any = "white-box", trials: int = 1000, n_people: int = 100,
                  neighbours: Neighbours | None = None, selection_fraction: float = 0.5, alpha: float = 0.05,
                  n_jobs: int | None = None, progress: bool = True, random_state: Any = None) -> PrivacyAuditResult:
    """Audit a synthesizer's privacy claim empirically: lower confidence bounds on its epsilon and mu.

    The synthesizer is fitted ``trials`` times on each of two neighbouring
    datasets (a worst-case canary person in or out); the attack scores every
    release; on ``selection_fraction`` of the fits of each dataset the
    threshold test with the largest bound is chosen (separately for epsilon and
    for mu), and on the other fits its false-positive and false-negative rates
    give the bounds (Clopper-Pearson, joint level ``1 - alpha``): choosing on
    separate fits keeps the bounds valid despite the search over thresholds.

    Parameters
    ----------
    estimator : synthesizer
        An unfitted (or fitted: it is cloned) synthesizer. Its ``schema``
        (tables) or ``vocabulary`` (sequences), when None, is set to the
        neighbours' public domain, so that the domain is not estimated.
    attack : {"white-box", "black-box"} or callable, default="white-box"
        ``"white-box"``: likelihood-ratio test on the released noisy statistics
        (:class:`WhiteBoxAttack`); ``"black-box"``: the canary's record in
        ``sample()`` (:class:`BlackBoxAttack`); a callable
        ``attack(fitted, neighbours) -> float`` (higher: the canary was in; an
        optional ``prepare(estimator, neighbours)`` method is called first).
    trials : int, default=1000
        Fits per neighbouring dataset (``2 * trials`` in all).
    n_people : int, default=100
        People in the dataset with the canary (ignored when ``neighbours`` is given).
    neighbours : Neighbours, optional
        The two datasets; default :func:`make_neighbours`.
    selection_fraction : float, default=0.5
        Share of each dataset's fits used to choose the tests.
    alpha : float, default=0.05
        The bounds hold with probability at least ``1 - alpha`` (one-sided).
    n_jobs : int or None, default=None
        Parallel fits (joblib; None: 1 unless inside a ``joblib.parallel_config``).
    progress : bool, default=True
        Show a progress bar over the fits.
    random_state : None, int or Generator
        Draws the background population and the selection split. The privacy
        noise of the fits is the synthesizer's own (fresh OS entropy unless
        ``reproducible_noise=True``).

    Returns
    -------
    PrivacyAuditResult

    Examples
    --------
    >>> from skdpsynth.synthesizers import DPMarginalsSynthesizer
    >>> res = audit_privacy(DPMarginalsSynthesizer(epsilon=1.0), trials=200, progress=False, random_state=0)
    >>> res.epsilon_lower <= res.epsilon
    True
    """
    _check_args(trials, selection_fraction, alpha)
    start = time.perf_counter()
    rng = check_random_state(random_state)
    neighbours = neighbours if neighbours is not None else make_neighbours(estimator, n_people=n_people,
                                                                           random_state=rng)
    est = _with_public_domain(estimator, neighbours)
    attack = _resolve_attack(attack)
    if hasattr(attack, "prepare"):
        attack.prepare(est, neighbours)
    epsilon, delta, mu_claim, publishable = _claim(est, neighbours)
    trials = int(trials)
    out, inn = _score_all(est, neighbours, attack, trials, n_jobs, progress, rng)
    k = min(max(int(round(selection_fraction * trials)), 1), trials - 1)
    eps_test = select_test(out[:k], inn[:k], measure="epsilon", delta=delta, alpha=alpha)
    mu_test = select_test(out[:k], inn[:k], measure="mu", alpha=alpha)
    ev = evaluate_test(eps_test, out[k:], inn[k:], delta=delta, alpha=alpha)
    mu_lower = evaluate_test(mu_test, out[k:], inn[k:], delta=delta, alpha=alpha)["mu_lower"]
    errors = {"epsilon": eps_test.counts(out[k:], inn[k:]), "mu": mu_test.counts(out[k:], inn[k:])}
    return PrivacyAuditResult(
        synthesizer=type(estimator).__name__, attack=_attack_name(attack), epsilon=epsilon, delta=delta,
        epsilon_lower=ev["epsilon_lower"], mu_lower=mu_lower, mu_claimed=mu_claim,
        mu_implied=mu_implied_by_epsilon(epsilon) if delta == 0 else None, trials=trials,
        n_people=len(neighbours.with_canary) if neighbours.kind == "table" else int(
            neighbours.with_canary[neighbours.columns["id"]].nunique()),
        selection_trials=k, fpr=ev["fpr"], fnr=ev["fnr"], fpr_upper=ev["fpr_upper"], fnr_upper=ev["fnr_upper"],
        errors=errors, epsilon_test=eps_test, mu_test=mu_test, confidence=1.0 - alpha, publishable=publishable,
        seconds=time.perf_counter() - start, scores_out=out, scores_in=inn,
    )
