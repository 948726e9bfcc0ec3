"""An exact statistic held privately, with the bound on how far one person moves it: measured or selected on.

The private-data handles (:class:`~skdpsynth.privacy.PrivateTable`, NPGC's
:class:`~skdpsynth.privacy._copula_statistics.PrivateCopulaStatistics`) turn the cohort into a
:class:`PrivateVector`: the exact values (never returned while private) and their *groups*, each with the largest
L1 change one person can make to the group's coordinates. The handle that builds a vector states those bounds
from the statistic's definition (a histogram: one group, bound 1, since a person is in one cell; a sum of clipped
per-person terms: one group per coordinate, bound the clip). Under add/remove one person every group moves at
once, so a set of coordinates ``S`` has

* L1 sensitivity ``sum_g b_g`` over the groups ``S`` touches, and
* L2 sensitivity ``sqrt(sum_g b_g^2)`` (within a group the L2 change is at most its L1 change).

Those are the sensitivities the mechanisms below are charged at; nothing else leaves the vector while private.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from skdpsynth.privacy._accounting import BudgetAccountant
from skdpsynth.privacy._mechanisms import (
    discrete_gaussian_mechanism,
    exponential_mechanism,
    exponential_mechanism_zcdp,
    gaussian_mechanism,
    geometric_mechanism,
    laplace_mechanism,
)
from skdpsynth.privacy._noise import NoiseSource

__all__ = ["PrivateVector"]


class PrivateVector:
    """Exact values with per-group sensitivity bounds, answered only through charged mechanisms.

    Parameters
    ----------
    values : numpy.ndarray
        The exact statistic (1-D), private.
    groups : numpy.ndarray of int
        Group of each coordinate.
    bounds : numpy.ndarray of float
        Per group, the largest L1 change one person makes to its coordinates.
    accountant : BudgetAccountant
        Charged before every draw.
    noise : NoiseSource
        The only source of noise.
    """

    def __init__(self, values: np.ndarray, groups: np.ndarray, bounds: np.ndarray, *,
                 accountant: BudgetAccountant, noise: NoiseSource) -> None:
        self.__values = np.asarray(values).reshape(-1)
        self.groups = np.asarray(groups, dtype=np.int64).reshape(-1)
        self.bounds = np.asarray(bounds, dtype=float).reshape(-1)
        self.size = self.__values.size
        self._accountant = accountant
        self._noise = noise

    def __reduce__(self):
        raise TypeError("a PrivateVector holds exact private statistics and is never pickled")

    def sensitivity(self, index=None) -> tuple[float, float]:
        """(L1, L2) sensitivity of the coordinates ``index`` (all when None); public."""
        touched = np.unique(self.groups if index is None else self.groups[np.asarray(index)])
        b = self.bounds[touched]
        return float(b.sum()), float(math.sqrt(np.sum(b ** 2)))

    def _l1_each(self, candidates: Sequence) -> np.ndarray:
        """L1 sensitivity of every candidate (as :meth:`sensitivity`), in one pass over them all."""
        index = [np.asarray(c, dtype=np.int64).reshape(-1) for c in candidates]
        owner = np.repeat(np.arange(len(index)), [i.size for i in index])
        n_groups = self.bounds.size
        touched = np.unique(owner * n_groups + self.groups[np.concatenate(index)])
        return np.bincount(touched // n_groups, weights=self.bounds[touched % n_groups], minlength=len(index))

    def _l1_rows(self, rows: np.ndarray) -> np.ndarray:
        """L1 sensitivity of every row of a 2-D index array (as :meth:`sensitivity`): its distinct groups' bounds."""
        g = np.sort(self.groups[rows], axis=1)
        first = np.ones(g.shape, dtype=bool)
        first[:, 1:] = g[:, 1:] != g[:, :-1]
        return np.where(first, self.bounds[g], 0.0).sum(axis=1)

    def measure(self, index=None, *, rho: float | None = None, epsilon: float | None = None, target: str,
                real: bool = False) -> np.ndarray:
        """The coordinates ``index`` with noise at their sensitivity (exact and declared when not private).

        Integer statistics get the discrete Gaussian (``rho``) or geometric (``epsilon``) mechanism; real ones
        (``real=True``) the Gaussian or Laplace mechanism on a public grid.

        Returns
        -------
        numpy.ndarray
        """
        exact = self.__values if index is None else self.__values[np.asarray(index)]
        if not self._accountant.private:
            self._accountant.declare_nonprivate(target)
            return exact.copy()
        if (rho is None) == (epsilon is None):
            raise ValueError(f"{target}: give exactly one of rho (zCDP) or epsilon (pure DP) for a private query")
        l1, l2 = self.sensitivity(index)
        kw = {"noise": self._noise, "accountant": self._accountant, "target": target}
        if rho is not None:
            mech = gaussian_mechanism if real else discrete_gaussian_mechanism
            return mech(exact, l2_sensitivity=l2, rho=rho, **kw)
        mech = laplace_mechanism if real else geometric_mechanism
        return mech(exact, sensitivity=l1, epsilon=epsilon, **kw)

    def select(self, candidates: Sequence, estimates: Sequence, *, rho: float | None = None,
               epsilon: float | None = None, weights: Sequence[float] | None = None,
               penalties: Sequence[float] | None = None, target: str) -> int:
        """The candidate worst explained by a public estimate: exponential mechanism (zCDP or pure).

        Utility ``w_c (||v[c] - estimate_c||_1 - penalty_c)``: one person moves ``v[c]`` by at most its L1
        sensitivity, so the utility by ``w_c`` times that; the mechanism's sensitivity is the largest of those.
        Without privacy: the argmax, declared. ``candidates`` is a sequence of coordinate arrays, or a 2-D
        integer array with one row of coordinates per candidate (``estimates`` then of the same shape).

        Returns
        -------
        int
            Index into ``candidates``.
        """
        k = len(candidates)
        w = np.ones(k) if weights is None else np.asarray(weights, dtype=float)
        pen = np.zeros(k) if penalties is None else np.asarray(penalties, dtype=float)
        rows = isinstance(candidates, np.ndarray) and candidates.ndim == 2  # one row of coordinates each
        if rows:
            candidates = candidates.astype(np.int64, copy=False)
            err = np.abs(self.__values[candidates] - np.asarray(estimates, dtype=float).reshape(candidates.shape)
                         ).sum(axis=1)
        else:
            index = [np.asarray(c, dtype=np.int64).reshape(-1) for c in candidates]
            gaps = np.abs(self.__values[np.concatenate(index)] - np.concatenate(
                [np.asarray(e, dtype=float).reshape(-1) for e in estimates]))
            err = np.bincount(np.repeat(np.arange(k), [i.size for i in index]), weights=gaps, minlength=k)
        utility = w * (err - pen)
        if not self._accountant.private:
            self._accountant.declare_nonprivate(target)
            return int(np.argmax(utility))
        if (rho is None) == (epsilon is None):
            raise ValueError(f"{target}: give exactly one of rho (zCDP) or epsilon (pure DP) for a private choice")
        sens = float(np.max(w * (self._l1_rows(candidates) if rows else self._l1_each(candidates))))
        kw = {"sensitivity": sens, "noise": self._noise, "accountant": self._accountant, "target": target}
        if rho is not None:
            return exponential_mechanism_zcdp(utility, rho=rho, **kw)
        return exponential_mechanism(utility, epsilon=epsilon, **kw)


class PrivateHandle:
    """What every private-data handle shares: its cohort's budget (public facts only) and no way out.

    A handle (:class:`~skdpsynth.privacy.PrivateTable`, NPGC's ``PrivateCopulaStatistics``, the sequences'
    ``PrivateSequences``) keeps the cohort in name-mangled attributes and answers queries through
    :class:`PrivateVector` (charged before it draws); it cannot be pickled and has no length (the number of people
    is private). Only a non-private fit (``epsilon=None``) may open its data, through :meth:`_open`, which records
    the use.

    Parameters
    ----------
    accountant : BudgetAccountant
        This cohort's budget.
    noise : NoiseSource
        The only source of privacy noise.
    """

    #: what the handle holds, for its refusals ("rows", "statistics", "learners")
    _holds = "data"

    def __init__(self, *, accountant: BudgetAccountant, noise: NoiseSource) -> None:
        self._accountant = accountant
        self._noise = noise

    def __reduce__(self):
        raise TypeError(f"a {type(self).__name__} holds private {self._holds} and is never pickled")

    @property
    def private(self) -> bool:
        """Whether the queries add noise (False for ``epsilon=None``)."""
        return self._accountant.private

    @property
    def cohort(self) -> int:
        """Index of the cohort (0 for ``fit``)."""
        return self._accountant.cohort

    @property
    def zcdp(self) -> bool:
        """Whether this cohort converts zCDP charges at a positive delta (else pure DP)."""
        return self._accountant.delta_zcdp > 0

    def remaining_rho(self, reserve_epsilon: float = 0.0) -> float:
        """zCDP budget left in this cohort (see ``BudgetAccountant.remaining_rho``)."""
        return self._accountant.remaining_rho(reserve_epsilon)

    def remaining_epsilon(self) -> float:
        """Pure-DP budget left in this cohort."""
        return self._accountant.remaining_epsilon()

    def remaining_delta(self) -> float:
        """Delta left in this cohort."""
        return self._accountant.remaining_delta()

    def require(self, records: Sequence, what: str) -> None:
        """Refuse, before anything is measured, a plan the budget cannot serve (see ``BudgetAccountant.require``)."""
        self._accountant.require(list(records), what=what)

    def _vector(self, values: np.ndarray, groups: np.ndarray, bounds: np.ndarray) -> PrivateVector:
        """``values`` kept private with their per-group bounds, answered through this handle's budget and noise."""
        return PrivateVector(values, groups, bounds, accountant=self._accountant, noise=self._noise)

    def _open(self, why: str) -> None:
        """Allow the exact data out for a non-private fit only, recording the use."""
        if self.private:
            raise PermissionError(f"the {self._holds} of a private cohort are answered only through DP queries")
        self._accountant.declare_nonprivate(why)
