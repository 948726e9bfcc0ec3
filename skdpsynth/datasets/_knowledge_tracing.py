"""Simulated knowledge-tracing sequences from BKT or a learning IRT model (:func:`make_knowledge_tracing`)."""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy.special import expit
from sklearn.utils import Bunch

from skdpsynth.datasets._sim_utils import _check_float, _check_int, _long_index, _sequence_id_columns
from skdpsynth.schema import ColumnSpec, TableSchema
from skdpsynth.utils._random import RandomStateLike, check_random_state

__all__ = ["make_knowledge_tracing"]


class _BKT:
    """Bayesian knowledge tracing: per-skill init/learn/guess/slip, per-learner learning-rate multiplier."""

    def __init__(self, rng: np.random.Generator, n: int, K: int):
        self.p_init = rng.uniform(0.05, 0.4, K)
        self.p_learn = rng.uniform(0.1, 0.35, K)
        self.p_guess = rng.uniform(0.1, 0.3, K)
        self.p_slip = rng.uniform(0.05, 0.15, K)
        self.speed = rng.lognormal(0.0, 0.4, n)  # learner learning-rate multiplier
        self.mastered = rng.random((n, K)) < self.p_init[None, :]
        self.skill_params = pd.DataFrame({"skill_id": np.arange(K), "p_init": self.p_init, "p_learn": self.p_learn,
                                          "p_guess": self.p_guess, "p_slip": self.p_slip})
        self.learner_params = pd.DataFrame({"learner_id": np.arange(n), "learn_speed": self.speed})

    def respond(self, rng: np.random.Generator, rows: np.ndarray, s: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Correctness of each learner's answer on skill ``s`` (uniforms ``u``), then the chance to learn it."""
        m = self.mastered[rows, s]
        p = np.where(m, 1.0 - self.p_slip[s], self.p_guess[s])
        correct = u < p
        learn = rng.random(len(rows)) < np.minimum(self.p_learn[s] * self.speed, 0.95)
        self.mastered[rows, s] = m | learn
        return correct


class _LearningIRT:
    """Learning 1PL: ``P(correct) = expit(theta + gain * log1p(prior attempts) - difficulty)``."""

    def __init__(self, rng: np.random.Generator, n: int, K: int):
        self.difficulty = rng.normal(0.0, 1.0, K)
        self.theta = rng.normal(0.0, 1.0, n)
        self.gain = rng.gamma(4.0, 0.2, n)  # mean 0.8 logits per log-attempt
        self.attempts = np.zeros((n, K))
        self.skill_params = pd.DataFrame({"skill_id": np.arange(K), "difficulty": self.difficulty})
        self.learner_params = pd.DataFrame({"learner_id": np.arange(n), "theta": self.theta, "gain": self.gain})

    def respond(self, rng: np.random.Generator, rows: np.ndarray, s: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Correctness of each learner's answer on skill ``s`` (uniforms ``u``), then count the attempt."""
        p = expit(self.theta + self.gain * np.log1p(self.attempts[rows, s]) - self.difficulty[s])
        self.attempts[rows, s] += 1
        return u < p


_MODELS = {"bkt": _BKT, "irt": _LearningIRT}


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
    lo, hi = _check_seq_len(seq_len)
    if model not in ("bkt", "irt"):
        raise ValueError(f"model must be 'bkt' or 'irt', got {model!r}.")
    rep = _check_float(p_repeat, "p_repeat", 0.0, 1.0, hi_open=True)
    rng = check_random_state(random_state)

    # the order of these draws matters: lengths, first skills, model parameters, then the responses
    lengths = rng.integers(lo, hi + 1, n)
    first_skills = rng.integers(0, K, n)
    learner_model = _MODELS[model](rng, n, K)
    skills, correct = _draw_practice(rng, learner_model, first_skills, K, hi, rep)
    frame = _long_frame(lengths, skills, correct)
    description = (
        f"Simulated knowledge tracing ({model.upper()}): {n} learners, {K} skills, {len(frame)} responses, "
        f"lengths in [{lo}, {hi}], p_repeat={rep}."
    )
    return Bunch(
        frame=frame,
        target="correct",
        schema=_sequence_schema(K, lo, hi),
        table_schema=_table_schema(n, K, hi),
        skill_params=learner_model.skill_params,
        learner_params=learner_model.learner_params,
        description=description,
    )


def _check_seq_len(seq_len) -> tuple[int, int]:
    """(min, max) sequence length from an int or a (min, max) pair."""
    if isinstance(seq_len, numbers.Integral) and not isinstance(seq_len, bool):
        lo = hi = _check_int(seq_len, "seq_len", 1)
        return lo, hi
    if isinstance(seq_len, str) or not isinstance(seq_len, Sequence) or len(seq_len) != 2:
        raise TypeError(f"seq_len must be an int or a (min, max) pair, got {seq_len!r}.")
    lo = _check_int(seq_len[0], "seq_len[0]", 1)
    hi = _check_int(seq_len[1], "seq_len[1]", 1)
    if lo > hi:
        raise ValueError(f"seq_len: min ({lo}) must not exceed max ({hi}).")
    return lo, hi


def _draw_practice(rng: np.random.Generator, learner_model: _BKT | _LearningIRT, first_skills: np.ndarray, K: int,
                   hi: int, rep: float) -> tuple[np.ndarray, np.ndarray]:
    """Skill practised and correctness (n, hi) at each position (loop over positions, vectorised over learners)."""
    n = len(first_skills)
    skills = np.empty((n, hi), dtype=np.int32)
    correct = np.empty((n, hi), dtype=np.int8)
    rows = np.arange(n)
    skills[:, 0] = first_skills
    for t in range(hi):
        if t:
            stay = rng.random(n) < rep
            skills[:, t] = np.where(stay, skills[:, t - 1], rng.integers(0, K, n))
        s = skills[:, t]
        u = rng.random(n)
        correct[:, t] = learner_model.respond(rng, rows, s, u)
    return skills, correct


def _long_frame(lengths: np.ndarray, skills: np.ndarray, correct: np.ndarray) -> pd.DataFrame:
    """One row per response, sorted by learner and position."""
    mask, learner, position = _long_index(lengths, skills.shape[1])
    return pd.DataFrame({
        "learner_id": learner.astype(np.int64),
        "position": position.astype(np.int64),
        "skill_id": skills[mask].astype(np.int64),
        "correct": correct[mask].astype(np.int64),
    })


def _sequence_schema(K: int, lo: int, hi: int) -> dict:
    return {
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


def _table_schema(n: int, K: int, hi: int) -> TableSchema:
    return TableSchema(_sequence_id_columns(n, hi) + (
        ColumnSpec("skill_id", "categorical", categories=tuple(range(K)), nullable=False),
        ColumnSpec("correct", "categorical", categories=(0, 1), nullable=False),
    ))
