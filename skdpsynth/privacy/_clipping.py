"""How many values a public schema clipped, counted through a mechanism.

Clipping to public bounds is what bounds one person's influence, so values
outside a confirmed schema are clipped, not refused. Whether (and how much) a
column was clipped is itself a fact about the data: it is released only as a
noisy count, charged to the budget, and a warning names a column only when its
noisy count stands clear of the noise.

The tally is a vector over the schema's bounded (numeric and datetime) columns,
so its length is public. Each row spreads a weight of one over the columns it
had clipped (``1/k`` each for ``k`` clipped columns), so adding or removing one
person -- one row -- changes the vector by at most 1 in L1 norm, however many
columns that row had out of range.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping

import numpy as np

from skdpsynth.privacy._accounting import BudgetAccountant
from skdpsynth.privacy._mechanisms import gaussian_mechanism, laplace_mechanism
from skdpsynth.privacy._noise import NoiseSource
from skdpsynth.schema import warn_clipped_columns

__all__ = ["CLIP_COUNT_SHARE", "ClipTally", "clip_cost", "release_clip_counts", "warn_clipped_exactly"]

#: share of a cohort's budget (its epsilon, or its rho for a model charged in zCDP) that counts the values a fixed
#: public schema clipped
CLIP_COUNT_SHARE = 0.01
#: a column is named when its noisy count passes a threshold that noise alone crosses in at most one fit in
#: ``_FALSE_ALARM`` over all ``d`` columns: ``b log(d F / 2)`` for Laplace scale b, ``sigma sqrt(2 log(d F))`` for
#: Gaussian noise (tails ``exp(-t / b) / 2`` and below ``exp(-t^2 / 2 sigma^2)`` per column). Rare enough that a
#: warning can be trusted: at epsilon 1 it takes about 850 clipped rows (Laplace) or 250 (Gaussian) to be named
_FALSE_ALARM = 10_000


class ClipTally(dict):
    """Per bounded column: the sum over rows of ``1/k`` for each row with ``k`` clipped columns (exact, private).

    Built by :meth:`add` from the clipped masks of a table or of one chunk; chunks merge by :meth:`merge`.
    """

    def add(self, masks: Mapping[str, np.ndarray | None]) -> ClipTally:
        """Add one table's (or chunk's) masks ``{column: bool array of clipped rows}``; None for unbounded."""
        bounded = {name: m for name, m in masks.items() if m is not None}
        for name in bounded:
            self.setdefault(name, 0.0)
        if bounded:
            stacked = np.vstack([np.asarray(m, dtype=bool) for m in bounded.values()])
            k = stacked.sum(axis=0)
            weight = np.divide(1.0, k, out=np.zeros(k.shape), where=k > 0)
            for name, row in zip(bounded, stacked, strict=True):
                self[name] += float(weight[row].sum())
        return self

    def merge(self, other: Mapping[str, float]) -> ClipTally:
        """The tally of two disjoint parts of one table."""
        out = ClipTally(self)
        for name, value in other.items():
            out[name] = out.get(name, 0.0) + value
        return out


def clip_cost(accountant: BudgetAccountant, zcdp: bool) -> dict[str, float]:
    """The count's cost (before anything else is charged): ``CLIP_COUNT_SHARE`` of the cohort's rho for a model
    charged in zCDP (keyword ``rho``), else of its epsilon (keyword ``epsilon``), for :func:`release_clip_counts`."""
    if zcdp:
        return {"rho": CLIP_COUNT_SHARE * accountant.remaining_rho()}
    return {"epsilon": CLIP_COUNT_SHARE * accountant.epsilon}


def release_clip_counts(tally: Mapping[str, float], *, noise: NoiseSource, accountant: BudgetAccountant,
                        label: str, epsilon: float | None = None, rho: float | None = None,
                        stacklevel: int = 2) -> dict[str, float]:
    """Release the clipped-value tally with noise and warn about the columns that stand out.

    Sensitivity under add/remove one person: one row spreads a weight of one over its ``k`` clipped columns, so the
    vector moves by at most 1 in L1 norm and by ``1/sqrt(k) <= 1`` in L2 norm. With ``epsilon``: discrete Laplace of
    scale about ``1 / epsilon`` per column, epsilon-DP. With ``rho``: discrete Gaussian of sigma about
    ``1 / sqrt(2 rho)``, rho-zCDP (a fit charged wholly in zCDP stays Gaussian, so its mu-GDP claim holds).

    Parameters
    ----------
    tally : mapping of str to float
        :class:`ClipTally` of the cohort (every bounded column, zeros included).
    epsilon, rho : float
        Cost: exactly one of them, charged as one pure or one zCDP record.
    noise, accountant
        As for :func:`~skdpsynth.privacy.laplace_mechanism`.
    label : str
        Who counts (goes in the budget log target).
    stacklevel : int, default=2
        Of the warning.

    Returns
    -------
    dict of str to float
        The noisy counts (about how many rows each column clipped); empty when there is no bounded column.
    """
    names = list(tally)
    if not names:
        return {}
    if (epsilon is None) == (rho is None):
        raise ValueError("give exactly one of epsilon and rho.")
    kw = dict(noise=noise, accountant=accountant, target=f"{label}: values clipped to the public bounds, per column")
    values = [tally[n] for n in names]
    if rho is None:
        noisy = laplace_mechanism(values, sensitivity=1.0, epsilon=epsilon, **kw)
        tail = math.log(_FALSE_ALARM * len(names) / 2)
    else:
        noisy = gaussian_mechanism(values, l2_sensitivity=1.0, rho=rho, **kw)
        tail = math.sqrt(2 * math.log(_FALSE_ALARM * len(names)))
    scale = accountant.records[-1].noise_scale
    threshold = scale * tail
    loud = [(n, v) for n, v in zip(names, noisy, strict=True) if v > threshold]
    if loud:
        shown = ", ".join(f"{n!r} (about {max(v, 0):.0f} rows)" for n, v in loud)
        warnings.warn(
            f"values outside the public bounds were clipped to them in columns {shown}: noisy counts, noise scale "
            f"{scale:.3g} (see the budget log and clip_counts_). Check those bounds against the codebook.",
            UserWarning, stacklevel=stacklevel)
    return dict(zip(names, (float(v) for v in noisy), strict=True))


def warn_clipped_exactly(tally: Mapping[str, float], stacklevel: int = 2) -> None:
    """A non-private fit (``epsilon=None``) names the clipped columns exactly, as :meth:`TableSchema.validate` does."""
    warn_clipped_columns([name for name, value in tally.items() if value > 0], stacklevel=stacklevel + 1)
