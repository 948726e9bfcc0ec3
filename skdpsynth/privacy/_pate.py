"""PATE teacher votes: a secret teacher partition and Gaussian noisy argmax (GNMax) with data-independent accounting.

PATE (Papernot et al. 2017, 2018) splits the private data among ``k``
teachers and answers each query (here: a generated row) by a noisy vote of
the teachers. Accounting here is data-independent: the number of queries
``T`` is fixed in advance and every query is charged (no data-dependent
smooth-sensitivity or moments bound, whose published implementations leaked;
Ganev et al. 2024).

Neighbouring relation: add/remove one person (one row).

* Partition. For any fixed map from people to teachers, adding or removing
  one person changes one teacher's partition only. Each row's teacher is an
  independent uniform draw from the secret noise source
  (:func:`teacher_partition`): a draw indexed by row position and derived
  from a known seed would not be such a map (removing a row moves every later
  row), whereas a secret data-independent draw makes the release a mixture,
  over partitions, of mechanisms that each satisfy the bound below, and a
  mixture keeps it (Renyi divergence is jointly quasi-convex).
* Votes. Each query's vote histogram (teachers voting "real", "fake") changes
  by at most one vote when one teacher's partition changes: L2 sensitivity
  ``sqrt(2)``. Independent discrete Gaussian noise ``N_Z(0, sigma^2)`` on both
  integer counts is ``1 / sigma^2``-zCDP per query (Canonne, Kamath & Steinke
  2020, Thm. 14); ``T`` adaptively chosen queries compose to ``T / sigma^2``
  and the noisy argmax is post-processing. This holds for any vote rule in
  which each teacher's vote is a function of its own partition and of public
  (generated) rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from skdpsynth.privacy._accounting import BudgetRecord
from skdpsynth.privacy._noise import NoiseSource

__all__ = ["PATEPlan", "plan_pate", "pate_record", "teacher_partition", "GNMaxAggregator"]

#: L2 sensitivity of one query's (real, fake) vote histogram: one teacher moves one vote
VOTE_L2_SENSITIVITY = math.sqrt(2.0)


@dataclass(frozen=True)
class PATEPlan:
    """A calibrated run of GNMax queries.

    Attributes
    ----------
    sigma : float
        Standard deviation of the discrete Gaussian noise on each vote count.
    queries : int
        Number of queries the plan pays for.
    n_teachers : int
        Number of teachers.
    rho : float
        zCDP cost of all the queries, ``queries / sigma^2``.
    """

    sigma: float
    queries: int
    n_teachers: int
    rho: float


def plan_pate(*, rho: float, queries: int, n_teachers: int) -> PATEPlan:
    """Calibrate GNMax so that ``queries`` vote queries cost exactly ``rho`` (zCDP).

    Each query costs ``Delta^2 / (2 sigma^2) = 1 / sigma^2`` (``Delta = sqrt(2)``),
    so ``sigma = sqrt(queries / rho)``.

    Parameters
    ----------
    rho : float
        zCDP budget of all the queries (> 0).
    queries : int
        Number of queries to be answered (>= 1), fixed in advance.
    n_teachers : int
        Number of teachers (>= 1).

    Returns
    -------
    PATEPlan
    """
    if not (math.isfinite(rho) and rho > 0):
        raise ValueError(f"rho must be a positive finite number, got {rho!r}.")
    if int(queries) != queries or queries < 1:
        raise ValueError(f"queries must be a positive integer, got {queries!r}.")
    if int(n_teachers) != n_teachers or n_teachers < 1:
        raise ValueError(f"n_teachers must be a positive integer, got {n_teachers!r}.")
    sigma = math.sqrt(queries * VOTE_L2_SENSITIVITY**2 / (2.0 * rho))
    return PATEPlan(float(sigma), int(queries), int(n_teachers), int(queries) / sigma**2)


def pate_record(plan: PATEPlan, target: str) -> BudgetRecord:
    """The zCDP budget record of a planned GNMax run (charge it before the first query)."""
    return BudgetRecord(
        "gaussian noisy argmax (discrete)", target, "zcdp", rho=plan.rho, sensitivity=VOTE_L2_SENSITIVITY,
        noise_scale=plan.sigma,
        details={"queries": plan.queries, "n_teachers": plan.n_teachers, "per_query_rho": 1.0 / plan.sigma**2,
                 "accounting": "data-independent"},
    )


def teacher_partition(n: int, n_teachers: int, noise: NoiseSource) -> np.ndarray:
    """Assign each of ``n`` rows to a teacher, independently and uniformly, from the secret ``noise`` source.

    Parameters
    ----------
    n : int
        Number of rows (never released).
    n_teachers : int
        Number of teachers.
    noise : NoiseSource
        The fit's noise source (the partition must not be derivable from public parameters).

    Returns
    -------
    numpy.ndarray of int64
        Teacher index of each row.
    """
    u = noise.uniform((int(n),))
    return np.minimum(np.floor(u * n_teachers).astype(np.int64), n_teachers - 1)


class GNMaxAggregator:
    """Answers at most ``plan.queries`` vote queries with GNMax; the plan's record must be charged first.

    A local object of one fit (it holds the noise source; never store it).

    Parameters
    ----------
    plan : PATEPlan
        The calibration (already charged with :func:`pate_record`).
    noise : NoiseSource
        The fit's noise source.
    """

    def __init__(self, plan: PATEPlan, noise: NoiseSource) -> None:
        self.plan = plan
        self._noise = noise
        self.answered = 0

    def __reduce__(self):
        raise TypeError("a GNMaxAggregator holds a noise source and is never pickled.")

    def labels(self, real_votes) -> np.ndarray:
        """Noisy majority of each query: True where noisy "real" votes exceed noisy "fake" votes.

        Parameters
        ----------
        real_votes : array-like of int
            Per query, the number of teachers voting "real" (in ``[0, n_teachers]``).

        Returns
        -------
        numpy.ndarray of bool
        """
        real = np.asarray(real_votes)
        k = self.plan.n_teachers
        if real.ndim != 1 or np.any(real != np.round(real)) or np.any((real < 0) | (real > k)):
            raise ValueError(f"real_votes must be a 1-d array of integer vote counts in [0, {k}].")
        if self.answered + len(real) > self.plan.queries:
            raise RuntimeError(f"GNMax plan pays for {self.plan.queries} queries; "
                               f"{self.answered + len(real)} were asked.")
        self.answered += len(real)
        counts = np.stack([real, k - real], axis=1).astype(np.int64)
        noisy = counts + self._noise.discrete_gaussian(self.plan.sigma, counts.shape)
        return noisy[:, 0] > noisy[:, 1]


class TeacherPartitions:
    """A cohort's encoded rows split among PATE's teachers, given out only as each teacher's own draws.

    Made by :meth:`~skdpsynth.privacy.PrivateTable.teachers`: every row's teacher is drawn from the secret noise
    source (:func:`teacher_partition`), and a teacher sees rows of its own partition only, so each vote is a
    function of one partition and of public rows, as GNMax's accounting requires (module docstring). Neither the
    partition sizes nor the number of people leave this object, except through the votes' charged noise.
    """

    def __init__(self, rows: np.ndarray, n_teachers: int, noise: NoiseSource) -> None:
        part = teacher_partition(len(rows), n_teachers, noise)
        self.__rows = rows
        self.__order = np.argsort(part, kind="stable")  # rows grouped by teacher
        self.__sizes = np.bincount(part, minlength=n_teachers)
        self.__starts = np.concatenate([[0], np.cumsum(self.__sizes)[:-1]])
        self.n_teachers = int(n_teachers)

    def __reduce__(self):
        raise TypeError("the teachers' partitions are private and never pickled")

    def draw(self, uniform: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows for every teacher, with replacement from its own partition.

        Parameters
        ----------
        uniform : numpy.ndarray, shape (n_teachers, b)
            Public uniform draws in [0, 1), scaled to each teacher's partition.

        Returns
        -------
        rows : numpy.ndarray, shape (n_teachers, b, dim)
        has_rows : numpy.ndarray of float, shape (n_teachers,)
            1 for a teacher with a non-empty partition (an empty one must not learn from the padding row).
        """
        local = np.floor(uniform * self.__sizes[:, None]).astype(np.int64)
        index = self.__order[np.minimum(self.__starts[:, None] + local, len(self.__order) - 1)]
        return self.__rows[index], (self.__sizes > 0).astype(np.float32)
