"""Simulated weekly learning habits with the CAPS case-study schema (:func:`make_learning_habits`)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy.special import expit
from sklearn.utils import Bunch

from skdpsynth.datasets._sim_utils import _categorical_draw, _check_float, _check_int
from skdpsynth.schema import ColumnSpec, TableSchema
from skdpsynth.utils._random import RandomStateLike, check_random_state

__all__ = ["make_learning_habits", "TIME_FRAMES", "ENGAGEMENT_CLASSES", "ACHIEVEMENT_CLASSES"]

#: Time frames of the day (Ricker et al. 2020, as used in papers/caps.md; "night" is the paper's "overnight").
TIME_FRAMES: tuple[str, ...] = ("morning", "afternoon", "evening", "night")
#: Weekly engagement classes per time frame: 0 min / 1-15 min / over 15 min.
ENGAGEMENT_CLASSES: tuple[str, ...] = ("inactive", "active", "dedicated")
#: Achievement classes (tertiles of the exam score in the paper).
ACHIEVEMENT_CLASSES: tuple[str, ...] = ("low", "middle", "high")


class _Traits(NamedTuple):
    """Latent per-student parameters of the learner model (arrays of length n, ``frame_pref`` is (n, F))."""

    engagement: np.ndarray  # overall engagement level
    chronotype: np.ndarray  # index of the preferred time frame
    trend: np.ndarray  # change of engagement from the first to the last week
    regularity: np.ndarray  # 1 = steady weekly routine, 0 = erratic
    persistence: np.ndarray  # AR(1) coefficient of weekly fluctuations
    frame_pref: np.ndarray  # preference for each time frame


class _Achievement(NamedTuple):
    score: np.ndarray
    label: np.ndarray  # index into ACHIEVEMENT_CLASSES
    flip: np.ndarray  # whether the label was replaced by a random class


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
    # the order of these steps is the order of the random draws: keep it
    traits = _draw_traits(rng, n, shift)
    codes = _draw_weekly_engagement(rng, traits, T)
    achievement = _draw_achievement(rng, traits, noise)
    return _assemble(codes, traits, achievement, shift=shift, noise=noise)


def _draw_traits(rng: np.random.Generator, n: int, shift: float) -> _Traits:
    """The latent learner model: engagement, chronotype, trend, regularity and time-frame preferences."""
    F = len(TIME_FRAMES)
    engagement = rng.normal(0.5 * shift, 1.0, n)
    base_chrono = np.array([0.30, 0.20, 0.40, 0.10])  # morning, afternoon, evening, night
    tilt = np.exp(shift * np.array([-0.4, -0.2, 0.3, 0.5]))
    chrono_p = base_chrono * tilt / (base_chrono * tilt).sum()
    chronotype = _categorical_draw(rng, np.broadcast_to(chrono_p, (n, F)))
    trend = rng.normal(0.0, 0.8, n)
    regularity = rng.beta(2.0, 2.0, n)
    persistence = 0.6 + 0.3 * regularity
    frame_pref = np.full((n, F), -0.9)
    frame_pref[np.arange(n), chronotype] = 0.9
    frame_pref += rng.normal(0.0, 0.3, (n, F))  # individual taste on top of the chronotype
    return _Traits(engagement, chronotype, trend, regularity, persistence, frame_pref)


def _draw_weekly_engagement(rng: np.random.Generator, traits: _Traits, T: int) -> np.ndarray:
    """Ordinal engagement codes (n, T, F) in {0, 1, 2}: AR(1) weekly dynamics (loop over weeks only)."""
    n, F = traits.frame_pref.shape
    persistence = traits.persistence
    week_pos = np.linspace(0.0, 1.0, T) if T > 1 else np.zeros(1)
    rhythm = 0.4 * np.exp(-((week_pos - 0.5) ** 2) / 0.01) + 0.6 * np.exp(-((week_pos - 1.0) ** 2) / 0.01)
    fluct_sd = 1.1 - 0.8 * traits.regularity
    w = rng.normal(0.0, 1.0, n) * fluct_sd
    eta = np.empty((n, T, F))
    for t in range(T):
        if t:
            w = persistence * w + rng.normal(0.0, 1.0, n) * fluct_sd * np.sqrt(1 - persistence**2)
        level = -0.2 + traits.engagement + traits.trend * (week_pos[t] - 0.5) + rhythm[t] + w
        eta[:, t, :] = level[:, None] + traits.frame_pref
    eta += rng.normal(0.0, 0.5, eta.shape)  # cell-level noise
    # ordinal logit: P(active or dedicated) = expit(eta), P(dedicated) = expit(eta - 2)
    u = rng.random(eta.shape)
    return (u < expit(eta)).astype(np.int8) + (u < expit(eta - 2.0)).astype(np.int8)


def _draw_achievement(rng: np.random.Generator, traits: _Traits, noise: float) -> _Achievement:
    """Exam score from the latent traits, binned at fixed cut points, then label noise."""
    n = len(traits.engagement)
    score = 0.8 * traits.engagement + 0.5 * traits.trend + 0.8 * (traits.regularity - 0.5) + rng.normal(0.0, 0.6, n)
    # fixed cut points: tertiles of the score's distribution at cohort_shift=0
    sd0 = np.sqrt(0.8**2 + 0.5**2 * 0.8**2 + 0.8**2 / 20.0 + 0.6**2)
    cuts = np.array([-0.4307, 0.4307]) * sd0
    label = np.searchsorted(cuts, score)
    flip = rng.random(n) < noise
    label = np.where(flip, rng.integers(0, 3, n), label)
    return _Achievement(score, label, flip)


def _assemble(codes: np.ndarray, traits: _Traits, achievement: _Achievement, *, shift: float, noise: float) -> Bunch:
    """The frame, the public schema, the latent diagnostics and the description, as a Bunch."""
    n, T, F = codes.shape
    width = max(2, len(str(T)))
    feature_names = [f"w{t + 1:0{width}d}_{f}" for t in range(T) for f in TIME_FRAMES]
    levels = np.array(ENGAGEMENT_CLASSES, dtype=object)
    data = pd.DataFrame(levels[codes.reshape(n, T * F)], columns=feature_names)
    frame = data.copy()
    frame["achievement"] = np.array(ACHIEVEMENT_CLASSES, dtype=object)[achievement.label]
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
        schema=_schema(feature_names),
        latent=_latent_frame(traits, achievement),
        description=description,
    )


def _schema(feature_names: list[str]) -> TableSchema:
    return TableSchema(
        tuple(ColumnSpec(c, "categorical", categories=ENGAGEMENT_CLASSES, nullable=False) for c in feature_names)
        + (ColumnSpec("achievement", "categorical", categories=ACHIEVEMENT_CLASSES, nullable=False),)
    )


def _latent_frame(traits: _Traits, achievement: _Achievement) -> pd.DataFrame:
    return pd.DataFrame({
        "engagement": traits.engagement,
        "chronotype": np.array(TIME_FRAMES, dtype=object)[traits.chronotype],
        "trend": traits.trend,
        "regularity": traits.regularity,
        "score": achievement.score,
        "label_flipped": achievement.flip,
    })
