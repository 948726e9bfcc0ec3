"""Simulators of learner data with known structure (nothing private).

Three generators, each returning a :class:`sklearn.utils.Bunch`:

* :func:`make_learning_habits` -- the CAPS case-study schema (papers/caps.md): 4
  time-of-day engagement features per week x ``n_weeks`` weeks, three engagement
  classes each, and a three-class achievement label that depends on a latent
  learner model (so it is genuinely, but noisily, predictable).
* :func:`make_clickstream` -- ordered activity sequences whose outcome is carried
  *only by the order* of events: both outcome groups share the same stationary
  activity frequencies (and the same length distribution) but have different,
  mutually time-reversed, transition matrices. An order-free generator (e.g. an
  i.i.d. event-frequency model) therefore destroys all of the outcome signal.
* :func:`make_knowledge_tracing` -- skill/correctness sequences from Bayesian
  knowledge tracing (BKT) or a learning IRT model, so that the next response is
  predictable from the learner's history on the same skill.

All simulators are deterministic for an integer ``random_state``, never touch
global random generators, and are vectorised over learners (Python loops run
only over weeks or positions).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy.special import expit
from sklearn.utils import Bunch

from skdpsynth.schema import ColumnSpec, TableSchema
from skdpsynth.utils._random import RandomStateLike, check_random_state

__all__ = [
    "make_learning_habits",
    "make_clickstream",
    "make_knowledge_tracing",
    "TIME_FRAMES",
    "ENGAGEMENT_CLASSES",
    "ACHIEVEMENT_CLASSES",
    "OULAD_ACTIVITY_TYPES",
]

#: Time frames of the day (Ricker et al. 2020, as used in papers/caps.md; "night" is the paper's "overnight").
TIME_FRAMES: tuple[str, ...] = ("morning", "afternoon", "evening", "night")
#: Weekly engagement classes per time frame: 0 min / 1-15 min / over 15 min.
ENGAGEMENT_CLASSES: tuple[str, ...] = ("inactive", "active", "dedicated")
#: Achievement classes (tertiles of the exam score in the paper).
ACHIEVEMENT_CLASSES: tuple[str, ...] = ("low", "middle", "high")
#: A subset of OULAD's ``vle.activity_type`` vocabulary (the most common types).
OULAD_ACTIVITY_TYPES: tuple[str, ...] = ("resource", "oucontent", "forumng", "quiz", "url", "subpage", "homepage")
# Rough OULAD-like relative frequencies of the default vocabulary (public, rounded).
_OULAD_ACTIVITY_WEIGHTS = (0.10, 0.22, 0.22, 0.10, 0.06, 0.12, 0.18)


# --------------------------------------------------------------------------- validation helpers
def _check_int(value, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} ({value!r}).")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}.")
    return int(value)


def _check_float(value, name: str, lo: float, hi: float, *, lo_open: bool = False, hi_open: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} ({value!r}).")
    v = float(value)
    if not np.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value}.")
    bad_lo = v <= lo if lo_open else v < lo
    bad_hi = v >= hi if hi_open else v > hi
    if bad_lo or bad_hi:
        lb = "(" if lo_open else "["
        rb = ")" if hi_open else "]"
        raise ValueError(f"{name} must be in {lb}{lo}, {hi}{rb}, got {value}.")
    return v


def _check_labels(values, name: str, min_count: int) -> tuple:
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise TypeError(f"{name} must be a sequence (list or tuple) of labels, got {values!r}.")
    vals = tuple(values)
    if len(vals) < min_count:
        raise ValueError(f"{name} needs at least {min_count} entries, got {len(vals)}.")
    if len(set(vals)) != len(vals):
        raise ValueError(f"{name} contains duplicates: {vals!r}.")
    return vals


def _check_weights(weights, n: int, name: str) -> np.ndarray:
    w = np.asarray(weights, dtype=float)
    if w.shape != (n,):
        raise ValueError(f"{name} must have {n} entries, got shape {w.shape}.")
    if not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError(f"{name} must be finite and strictly positive, got {w.tolist()}.")
    return w / w.sum()


def _categorical_draw(rng: np.random.Generator, probs: np.ndarray) -> np.ndarray:
    """One draw per row of a (n, k) probability matrix (vectorised inverse CDF)."""
    cdf = np.cumsum(probs, axis=-1)
    u = rng.random(probs.shape[:-1] + (1,)) * cdf[..., -1:]
    return np.minimum((u > cdf).sum(axis=-1), probs.shape[-1] - 1)


# --------------------------------------------------------------------------- learning habits (CAPS)
def make_learning_habits(
    n_students: int,
    n_weeks: int = 17,
    *,
    cohort_shift: float = 0.0,
    label_noise: float = 0.1,
    random_state: RandomStateLike = None,
) -> Bunch:
    """Simulated weekly learning-habit data with the CAPS case-study schema.

    Each student has a latent engagement level, a preferred time of day
    (chronotype), a weekly trend and a regularity; weekly engagement evolves as
    an AR(1) process around them with a course-wide rhythm (busier around
    mid-term and the final weeks). Each (week, time frame) cell is an ordinal
    draw of ``inactive`` / ``active`` / ``dedicated``. The exam score is a noisy
    function of engagement, trend and regularity, binned into ``low`` /
    ``middle`` / ``high`` at fixed thresholds (the tertiles of the score at
    ``cohort_shift=0``, so shifted cohorts also differ in their label mix).

    Parameters
    ----------
    n_students : int
        Number of students (rows), >= 1.
    n_weeks : int, default=17
        Number of weeks; the table has ``4 * n_weeks`` features (68 at the default).
    cohort_shift : float, default=0.0
        Shifts the cohort's distribution: positive values raise mean engagement
        and move the chronotype mix towards evening/night; 0 is the reference
        cohort. Successive cohorts can use e.g. 0, 0.2, 0.4. Must be in [-3, 3].
    label_noise : float, default=0.1
        Probability that a student's achievement class is replaced by a uniformly
        random class, in [0, 1].
    random_state : int, Generator, RandomState, SeedSequence or None
        Seed of the simulation.

    Returns
    -------
    Bunch
        ``frame`` (DataFrame: the features ``w01_morning`` ... then
        ``achievement``; object dtype strings), ``data`` (features only),
        ``target`` (``"achievement"``), ``feature_names``, ``target_names``,
        ``schema`` (public :class:`~skdpsynth.TableSchema`: every column
        categorical, not nullable), ``latent`` (DataFrame of the latent learner
        parameters and exam score, for diagnostics), ``description``.

    Examples
    --------
    >>> from skdpsynth.datasets import make_learning_habits
    >>> b = make_learning_habits(100, random_state=0)
    >>> b.frame.shape
    (100, 69)
    >>> sorted(b.frame["achievement"].unique())
    ['high', 'low', 'middle']
    """
    n = _check_int(n_students, "n_students", 1)
    T = _check_int(n_weeks, "n_weeks", 1)
    shift = _check_float(cohort_shift, "cohort_shift", -3.0, 3.0)
    noise = _check_float(label_noise, "label_noise", 0.0, 1.0)
    rng = check_random_state(random_state)
    F = len(TIME_FRAMES)

    # latent learner model --------------------------------------------------
    engagement = rng.normal(0.5 * shift, 1.0, n)  # overall engagement level
    base_chrono = np.array([0.30, 0.20, 0.40, 0.10])  # morning, afternoon, evening, night
    tilt = np.exp(shift * np.array([-0.4, -0.2, 0.3, 0.5]))
    chrono_p = base_chrono * tilt / (base_chrono * tilt).sum()
    chronotype = _categorical_draw(rng, np.broadcast_to(chrono_p, (n, F)))
    trend = rng.normal(0.0, 0.8, n)  # change of engagement from the first to the last week
    regularity = rng.beta(2.0, 2.0, n)  # 1 = steady weekly routine, 0 = erratic
    persistence = 0.6 + 0.3 * regularity  # AR(1) coefficient of weekly fluctuations
    frame_pref = np.full((n, F), -0.9)
    frame_pref[np.arange(n), chronotype] = 0.9
    frame_pref += rng.normal(0.0, 0.3, (n, F))  # individual taste on top of the chronotype

    # weekly dynamics (loop over weeks only) ----------------------------------
    week_pos = np.linspace(0.0, 1.0, T) if T > 1 else np.zeros(1)
    rhythm = 0.4 * np.exp(-((week_pos - 0.5) ** 2) / 0.01) + 0.6 * np.exp(-((week_pos - 1.0) ** 2) / 0.01)
    fluct_sd = 1.1 - 0.8 * regularity
    w = rng.normal(0.0, 1.0, n) * fluct_sd
    eta = np.empty((n, T, F))
    for t in range(T):
        if t:
            w = persistence * w + rng.normal(0.0, 1.0, n) * fluct_sd * np.sqrt(1 - persistence**2)
        level = -0.2 + engagement + trend * (week_pos[t] - 0.5) + rhythm[t] + w
        eta[:, t, :] = level[:, None] + frame_pref
    eta += rng.normal(0.0, 0.5, eta.shape)  # cell-level noise
    # ordinal logit: P(active or dedicated) = expit(eta), P(dedicated) = expit(eta - 2)
    u = rng.random(eta.shape)
    codes = (u < expit(eta)).astype(np.int8) + (u < expit(eta - 2.0)).astype(np.int8)

    # achievement -------------------------------------------------------------
    score = 0.8 * engagement + 0.5 * trend + 0.8 * (regularity - 0.5) + rng.normal(0.0, 0.6, n)
    # fixed cut points: tertiles of the score's distribution at cohort_shift=0
    sd0 = np.sqrt(0.8**2 + 0.5**2 * 0.8**2 + 0.8**2 / 20.0 + 0.6**2)
    cuts = np.array([-0.4307, 0.4307]) * sd0
    label = np.searchsorted(cuts, score)
    flip = rng.random(n) < noise
    label = np.where(flip, rng.integers(0, 3, n), label)

    # assemble ----------------------------------------------------------------
    width = max(2, len(str(T)))
    feature_names = [f"w{t + 1:0{width}d}_{f}" for t in range(T) for f in TIME_FRAMES]
    levels = np.array(ENGAGEMENT_CLASSES, dtype=object)
    data = pd.DataFrame(levels[codes.reshape(n, T * F)], columns=feature_names)
    frame = data.copy()
    frame["achievement"] = np.array(ACHIEVEMENT_CLASSES, dtype=object)[label]
    schema = TableSchema(
        tuple(ColumnSpec(c, "categorical", categories=ENGAGEMENT_CLASSES, nullable=False) for c in feature_names)
        + (ColumnSpec("achievement", "categorical", categories=ACHIEVEMENT_CLASSES, nullable=False),)
    )
    latent = pd.DataFrame({
        "engagement": engagement,
        "chronotype": np.array(TIME_FRAMES, dtype=object)[chronotype],
        "trend": trend,
        "regularity": regularity,
        "score": score,
        "label_flipped": flip,
    })
    description = (
        f"Simulated learning habits: {n} students x {T} weeks x {F} time frames ({T * F} categorical features in "
        f"{ENGAGEMENT_CLASSES}), label 'achievement' in {ACHIEVEMENT_CLASSES}; cohort_shift={shift}, "
        f"label_noise={noise}. Schema as in the CAPS case study (papers/caps.md); values are synthetic."
    )
    return Bunch(
        frame=frame,
        data=data,
        target="achievement",
        feature_names=feature_names,
        target_names=list(ACHIEVEMENT_CLASSES),
        schema=schema,
        latent=latent,
        description=description,
    )


# --------------------------------------------------------------------------- clickstream
def _circulation(k: int) -> np.ndarray:
    """A non-reversible zero-row/column-sum flow: all 3-cycles a->b->c->a (a<b<c) minus their reverses."""
    D = np.zeros((k, k))
    for a in range(k):
        for b in range(a + 1, k):
            for c in range(b + 1, k):
                for i, j in ((a, b), (b, c), (c, a)):
                    D[i, j] += 1.0
                    D[j, i] -= 1.0
    return D


def _order_chains(pi: np.ndarray, strength: float) -> tuple[np.ndarray, np.ndarray]:
    """Two transition matrices with stationary distribution ``pi`` that are time reversals of each other."""
    k = len(pi)
    base = np.outer(pi, pi)  # edge flows of the i.i.d. chain
    D = _circulation(k)
    neg = D < 0
    t_max = np.min(base[neg] / -D[neg]) if neg.any() else 0.0
    flow = base + strength * t_max * D
    P_a = flow / pi[:, None]
    P_b = flow.T / pi[:, None]  # time reversal: same stationary distribution, reversed order preferences
    P_a = np.clip(P_a, 0.0, None)
    P_b = np.clip(P_b, 0.0, None)
    return P_a / P_a.sum(1, keepdims=True), P_b / P_b.sum(1, keepdims=True)


def make_clickstream(
    n_learners: int,
    *,
    activity_types: Sequence[str] = OULAD_ACTIVITY_TYPES,
    activity_weights: Sequence[float] | None = None,
    outcomes: Sequence[str] = ("pass", "fail"),
    outcome_weights: Sequence[float] | None = None,
    min_length: int = 10,
    max_length: int = 60,
    order_strength: float = 0.9,
    random_state: RandomStateLike = None,
) -> Bunch:
    """Simulated clickstreams whose outcome depends on the order of events only.

    Each outcome group follows a stationary first-order Markov chain over the
    activity vocabulary. All chains share the same stationary distribution
    (``activity_weights``) and the first event is drawn from it, so the expected
    activity frequencies are identical at every position for every group, and
    sequence lengths are uniform on ``[min_length, max_length]`` for everyone.
    The groups differ only in their transitions: the first group's chain adds a
    circulation that favours the listed order of activities (e.g. ``oucontent``
    -> ``quiz``), the second group's chain is its time reversal (favouring the
    reverse order). With more than two outcomes, groups alternate between the
    two chains with different strengths (``order_strength`` scaled down by group).

    Parameters
    ----------
    n_learners : int
        Number of learners, >= 1.
    activity_types : sequence of str, default=OULAD_ACTIVITY_TYPES
        The public event vocabulary (at least 3 distinct types, so that a
        non-reversible chain exists); the listed order is the "forward" order.
    activity_weights : sequence of float, optional
        Stationary activity frequencies (normalised). Default: OULAD-like weights
        for the default vocabulary, uniform otherwise.
    outcomes : sequence of str, default=("pass", "fail")
        Outcome labels (at least 2).
    outcome_weights : sequence of float, optional
        Outcome probabilities (normalised); default uniform.
    min_length, max_length : int, default=10, 60
        Bounds of the per-learner sequence length (1 <= min_length <= max_length).
    order_strength : float, default=0.9
        In [0, 1]: 0 gives identical (i.i.d.) chains for all groups (no signal),
        1 the most non-reversible chains allowed by the stationary distribution.
    random_state : int, Generator, RandomState, SeedSequence or None
        Seed of the simulation.

    Returns
    -------
    Bunch
        ``frame`` (long DataFrame with ``learner_id``, ``position`` (0, 1, ...
        per learner), ``activity``, ``outcome``; sorted by learner and position),
        ``target`` (``"outcome"``), ``schema`` (dict: column roles, the public
        ``vocabulary``, ``outcomes`` and length bounds), ``table_schema`` (a
        :class:`~skdpsynth.TableSchema` of the long table), ``transition_matrices``
        (dict outcome -> true transition matrix), ``stationary`` (the shared
        stationary distribution), ``description``.

    Examples
    --------
    >>> from skdpsynth.datasets import make_clickstream
    >>> b = make_clickstream(50, random_state=0)
    >>> list(b.frame.columns)
    ['learner_id', 'position', 'activity', 'outcome']
    """
    n = _check_int(n_learners, "n_learners", 1)
    vocab = _check_labels(activity_types, "activity_types", 3)
    if not all(isinstance(a, str) and a for a in vocab):
        raise TypeError("activity_types must be non-empty strings.")
    outs = _check_labels(outcomes, "outcomes", 2)
    lo = _check_int(min_length, "min_length", 1)
    hi = _check_int(max_length, "max_length", 1)
    if lo > hi:
        raise ValueError(f"min_length ({lo}) must not exceed max_length ({hi}).")
    strength = _check_float(order_strength, "order_strength", 0.0, 1.0)
    k = len(vocab)
    if activity_weights is None:
        pi = np.array(_OULAD_ACTIVITY_WEIGHTS) if vocab == OULAD_ACTIVITY_TYPES else np.full(k, 1.0 / k)
    else:
        pi = _check_weights(activity_weights, k, "activity_weights")
    p_out = np.full(len(outs), 1.0 / len(outs)) if outcome_weights is None else _check_weights(
        outcome_weights, len(outs), "outcome_weights")
    rng = check_random_state(random_state)

    chains = []
    for g in range(len(outs)):
        s = strength / (1 + g // 2)  # groups 0/1 at full strength, 2/3 at half, ...
        P_a, P_b = _order_chains(pi, s)
        chains.append(P_a if g % 2 == 0 else P_b)
    P = np.stack(chains)  # (groups, k, k)

    group = _categorical_draw(rng, np.broadcast_to(p_out, (n, len(outs))))
    lengths = rng.integers(lo, hi + 1, n)
    states = np.empty((n, hi), dtype=np.int16 if k < 2**15 else np.int32)
    states[:, 0] = _categorical_draw(rng, np.broadcast_to(pi, (n, k)))
    for t in range(1, hi):  # loop over positions, vectorised over learners
        states[:, t] = _categorical_draw(rng, P[group, states[:, t - 1]])
    mask = np.arange(hi)[None, :] < lengths[:, None]
    learner = np.broadcast_to(np.arange(n)[:, None], (n, hi))[mask]
    position = np.broadcast_to(np.arange(hi)[None, :], (n, hi))[mask]
    frame = pd.DataFrame({
        "learner_id": learner.astype(np.int64),
        "position": position.astype(np.int64),
        "activity": np.array(vocab, dtype=object)[states[mask]],
        "outcome": np.array(outs, dtype=object)[group][learner],
    })
    schema = {
        "kind": "sequence",
        "id": "learner_id",
        "order": "position",
        "event": "activity",
        "outcome": "outcome",
        "vocabulary": vocab,
        "outcomes": outs,
        "min_length": lo,
        "max_length": hi,
    }
    table_schema = TableSchema((
        ColumnSpec("learner_id", "integer", lower=0, upper=max(n - 1, 0), nullable=False),
        ColumnSpec("position", "integer", lower=0, upper=hi - 1, nullable=False),
        ColumnSpec("activity", "categorical", categories=vocab, nullable=False),
        ColumnSpec("outcome", "categorical", categories=outs, nullable=False),
    ))
    description = (
        f"Simulated clickstreams: {n} learners, {len(frame)} events, lengths in [{lo}, {hi}], vocabulary {vocab}, "
        f"outcomes {outs}. All outcome groups share the same stationary activity frequencies and length "
        f"distribution; only the order of events (transition matrices, order_strength={strength}) differs."
    )
    return Bunch(
        frame=frame,
        target="outcome",
        schema=schema,
        table_schema=table_schema,
        transition_matrices={o: P[g] for g, o in enumerate(outs)},
        stationary=pi,
        description=description,
    )


# --------------------------------------------------------------------------- knowledge tracing
def make_knowledge_tracing(
    n_learners: int,
    *,
    n_skills: int = 10,
    seq_len: int | tuple[int, int] = (20, 50),
    model: str = "bkt",
    p_repeat: float = 0.6,
    random_state: RandomStateLike = None,
) -> Bunch:
    """Simulated knowledge-tracing sequences (skill practised, correct or not).

    Learners practise skills in runs: the next item is on the same skill with
    probability ``p_repeat``, otherwise on a uniformly chosen skill.

    * ``model="bkt"`` -- Bayesian knowledge tracing (Corbett & Anderson 1994):
      each skill has ``p_init`` (prior mastery), ``p_learn`` (mastery after a
      practice opportunity), ``p_guess`` and ``p_slip``; a learner answers
      correctly with probability ``1 - p_slip`` if the skill is mastered and
      ``p_guess`` otherwise, then may learn it. Learners differ in a learning-rate
      multiplier.
    * ``model="irt"`` -- a learning 1PL/Rasch model: ``P(correct) =
      expit(theta + gain * log1p(prior attempts on the skill) - difficulty)`` with
      learner ability ``theta`` and per-learner learning gain.

    Parameters
    ----------
    n_learners : int
        Number of learners, >= 1.
    n_skills : int, default=10
        Number of skills (ids ``0 .. n_skills-1``), >= 1.
    seq_len : int or (int, int), default=(20, 50)
        Sequence length, fixed or uniform on the inclusive range.
    model : {"bkt", "irt"}, default="bkt"
        The learner model.
    p_repeat : float, default=0.6
        Probability that the next item practises the same skill, in [0, 1).
    random_state : int, Generator, RandomState, SeedSequence or None
        Seed of the simulation.

    Returns
    -------
    Bunch
        ``frame`` (long DataFrame with ``learner_id``, ``position``,
        ``skill_id``, ``correct`` (0/1); sorted by learner and position),
        ``target`` (``"correct"``), ``schema`` (dict: column roles, public
        ``skills`` vocabulary and length bounds), ``table_schema``
        (:class:`~skdpsynth.TableSchema` of the long table), ``skill_params``
        (DataFrame of the true per-skill parameters), ``learner_params``,
        ``description``.

    Examples
    --------
    >>> from skdpsynth.datasets import make_knowledge_tracing
    >>> b = make_knowledge_tracing(20, n_skills=5, random_state=0)
    >>> sorted(b.frame["correct"].unique().tolist())
    [0, 1]
    """
    n = _check_int(n_learners, "n_learners", 1)
    K = _check_int(n_skills, "n_skills", 1)
    if isinstance(seq_len, numbers.Integral) and not isinstance(seq_len, bool):
        lo = hi = _check_int(seq_len, "seq_len", 1)
    else:
        if isinstance(seq_len, str) or not isinstance(seq_len, Sequence) or len(seq_len) != 2:
            raise TypeError(f"seq_len must be an int or a (min, max) pair, got {seq_len!r}.")
        lo = _check_int(seq_len[0], "seq_len[0]", 1)
        hi = _check_int(seq_len[1], "seq_len[1]", 1)
        if lo > hi:
            raise ValueError(f"seq_len: min ({lo}) must not exceed max ({hi}).")
    if model not in ("bkt", "irt"):
        raise ValueError(f"model must be 'bkt' or 'irt', got {model!r}.")
    rep = _check_float(p_repeat, "p_repeat", 0.0, 1.0, hi_open=True)
    rng = check_random_state(random_state)

    lengths = rng.integers(lo, hi + 1, n)
    skills = np.empty((n, hi), dtype=np.int32)
    correct = np.empty((n, hi), dtype=np.int8)
    rows = np.arange(n)
    skills[:, 0] = rng.integers(0, K, n)
    if model == "bkt":
        p_init = rng.uniform(0.05, 0.4, K)
        p_learn = rng.uniform(0.1, 0.35, K)
        p_guess = rng.uniform(0.1, 0.3, K)
        p_slip = rng.uniform(0.05, 0.15, K)
        speed = rng.lognormal(0.0, 0.4, n)  # learner learning-rate multiplier
        mastered = rng.random((n, K)) < p_init[None, :]
        skill_params = pd.DataFrame({"skill_id": np.arange(K), "p_init": p_init, "p_learn": p_learn,
                                     "p_guess": p_guess, "p_slip": p_slip})
        learner_params = pd.DataFrame({"learner_id": rows, "learn_speed": speed})
    else:
        difficulty = rng.normal(0.0, 1.0, K)
        theta = rng.normal(0.0, 1.0, n)
        gain = rng.gamma(4.0, 0.2, n)  # mean 0.8 logits per log-attempt
        attempts = np.zeros((n, K))
        skill_params = pd.DataFrame({"skill_id": np.arange(K), "difficulty": difficulty})
        learner_params = pd.DataFrame({"learner_id": rows, "theta": theta, "gain": gain})
    for t in range(hi):
        if t:
            stay = rng.random(n) < rep
            skills[:, t] = np.where(stay, skills[:, t - 1], rng.integers(0, K, n))
        s = skills[:, t]
        u = rng.random(n)
        if model == "bkt":
            m = mastered[rows, s]
            p = np.where(m, 1.0 - p_slip[s], p_guess[s])
            correct[:, t] = u < p
            learn = rng.random(n) < np.minimum(p_learn[s] * speed, 0.95)
            mastered[rows, s] = m | learn
        else:
            p = expit(theta + gain * np.log1p(attempts[rows, s]) - difficulty[s])
            correct[:, t] = u < p
            attempts[rows, s] += 1
    mask = np.arange(hi)[None, :] < lengths[:, None]
    learner = np.broadcast_to(rows[:, None], (n, hi))[mask]
    position = np.broadcast_to(np.arange(hi)[None, :], (n, hi))[mask]
    frame = pd.DataFrame({
        "learner_id": learner.astype(np.int64),
        "position": position.astype(np.int64),
        "skill_id": skills[mask].astype(np.int64),
        "correct": correct[mask].astype(np.int64),
    })
    schema = {
        "kind": "knowledge_tracing",
        "id": "learner_id",
        "order": "position",
        "skill": "skill_id",
        "response": "correct",
        "skills": tuple(range(K)),
        "n_skills": K,
        "min_length": lo,
        "max_length": hi,
    }
    table_schema = TableSchema((
        ColumnSpec("learner_id", "integer", lower=0, upper=max(n - 1, 0), nullable=False),
        ColumnSpec("position", "integer", lower=0, upper=hi - 1, nullable=False),
        ColumnSpec("skill_id", "categorical", categories=tuple(range(K)), nullable=False),
        ColumnSpec("correct", "categorical", categories=(0, 1), nullable=False),
    ))
    description = (
        f"Simulated knowledge tracing ({model.upper()}): {n} learners, {K} skills, {len(frame)} responses, "
        f"lengths in [{lo}, {hi}], p_repeat={rep}."
    )
    return Bunch(
        frame=frame,
        target="correct",
        schema=schema,
        table_schema=table_schema,
        skill_params=skill_params,
        learner_params=learner_params,
        description=description,
    )
