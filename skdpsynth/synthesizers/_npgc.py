"""NPGC: a non-parametric Gaussian copula that is differentially private end to end.

The method of papers/npgc-en.md (empirical marginals coupled by a Gaussian copula),
rebuilt so that every use of the private data is accounted for: noisy histograms on
a public grid for the marginals, one Gaussian mechanism on all of them, a rank
correlation (Kendall's tau) with a proven sensitivity for the dependence, and a
data-independent way of handling the unknown number of rows. See
:class:`NPGCSynthesizer` for the privacy argument and ``docs/npgc.md`` for figures.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import ndtr, ndtri, owens_t

from skdpsynth._grid import ColumnGrid, _as_seconds, seconds_to_datetime
from skdpsynth.base import BaseTabularSynthesizer
from skdpsynth.privacy._accounting import BudgetAccountant, BudgetRecord, approx_dp_to_zcdp
from skdpsynth.privacy._mechanisms import (
    gaussian_mechanism,
    gaussian_sigma,
    geometric_mechanism,
    laplace_mechanism,
)

__all__ = ["NPGCSynthesizer"]

logger = logging.getLogger(__name__)

#: standard deviations below the noisy row count used as the public size ``a`` of the tau query
_N_BOUND_Z = 3.0
#: smallest eigenvalue kept by the nearest-correlation repair
_EIG_FLOOR = 1e-6
#: rows drawn at a time by ``sample``
_CHUNK = 1 << 16
#: decode() ignores ``within`` for cells without width; passing it avoids drawing unused randomness
_NO_WITHIN = np.zeros(0)


# ----------------------------------------------------------------------------------------------
# helpers (pure functions, no private state)
# ----------------------------------------------------------------------------------------------
def project_to_simplex(values: np.ndarray, total: float) -> np.ndarray:
    """Euclidean projection of noisy counts onto ``{c >= 0, sum(c) = total}`` ("norm-sub").

    Post-processing of noisy counts: it removes negative counts without the
    upward bias of clipping at zero (many empty cells would otherwise collect
    the positive half of their noise).

    Parameters
    ----------
    values : ndarray of float
        Noisy counts of one histogram.
    total : float
        The total to project onto (> 0).

    Returns
    -------
    ndarray of float
    """
    v = np.asarray(values, dtype=float)
    if total <= 0 or v.size == 0:
        return np.full(v.size, max(total, 0.0) / max(v.size, 1))
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - total
    ind = np.arange(1, v.size + 1)
    cond = u - css / ind > 0
    k = ind[cond][-1]
    theta = css[cond][-1] / k
    return np.maximum(v - theta, 0.0)


def nearest_correlation(matrix: np.ndarray, floor: float = _EIG_FLOOR) -> np.ndarray:
    """Nearest correlation matrix by eigenvalue clipping and rescaling to a unit diagonal.

    Parameters
    ----------
    matrix : ndarray of shape (d, d)
        A symmetric estimate (noisy correlations, unit diagonal).
    floor : float
        Smallest eigenvalue kept, so that the result is positive definite.

    Returns
    -------
    ndarray of shape (d, d)
    """
    m = np.asarray(matrix, dtype=float)
    m = (m + m.T) / 2.0
    np.fill_diagonal(m, 1.0)
    w, v = np.linalg.eigh(m)
    if w.min() >= floor:
        return m
    m = (v * np.clip(w, floor, None)) @ v.T
    s = np.sqrt(np.diag(m))
    m = m / np.outer(s, s)
    np.fill_diagonal(m, 1.0)
    return (m + m.T) / 2.0


def _cholesky(corr: np.ndarray) -> np.ndarray:
    try:
        return np.linalg.cholesky(corr)
    except np.linalg.LinAlgError:  # pragma: no cover - nearest_correlation keeps eigenvalues >= floor
        return np.linalg.cholesky(nearest_correlation(corr, floor=1e-4))


def _tau_from_table(table: np.ndarray) -> float:
    """Kendall's tau-a of a contingency table (rows and columns ordered)."""
    n = table.sum()
    nx, ny = table.shape
    if n < 2 or nx < 2 or ny < 2:
        return 0.0
    # ge[i, l] = people with x >= i and y >= l;  le[i, l] = people with x >= i and y <= l
    ge = table[::-1, ::-1].cumsum(0).cumsum(1)[::-1, ::-1]
    le = table[::-1, :].cumsum(0)[::-1, :].cumsum(1)
    above = np.zeros_like(table)  # x' > x and y' > y
    above[:-1, :-1] = ge[1:, 1:]
    below = np.zeros_like(table)  # x' > x and y' < y
    below[:-1, 1:] = le[1:, :-1]
    s = float((table * (above - below)).sum())
    return s / (n * (n - 1) / 2.0)


def bvn_cdf(h: np.ndarray, k: np.ndarray, r: float) -> np.ndarray:
    """Bivariate standard normal CDF ``P(Z1 <= h_a, Z2 <= k_b)`` on a grid, correlation ``|r| < 1``.

    Owen's (1956) formula with Owen's T function (vectorised):
    ``Phi2(h, k) = (Phi(h) + Phi(k)) / 2 - T(h, a_h) - T(k, a_k) - [h k < 0] / 2``.
    """
    hh = np.asarray(h, dtype=float)[:, None]
    kk = np.asarray(k, dtype=float)[None, :]
    hh = np.where(np.abs(hh) < 1e-10, 1e-10, hh)
    kk = np.where(np.abs(kk) < 1e-10, 1e-10, kk)
    sq = math.sqrt(1.0 - r * r)
    t1 = owens_t(hh, (kk - r * hh) / (hh * sq))
    t2 = owens_t(kk, (hh - r * kk) / (kk * sq))
    return 0.5 * ndtr(hh) + 0.5 * ndtr(kk) - t1 - t2 - 0.5 * (hh * kk < 0)


def _thresholds(p: np.ndarray) -> np.ndarray:
    """Latent normal cut points between the non-empty cells of a marginal."""
    q = p[p > 1e-12]
    q = q / q.sum()
    return ndtri(np.clip(np.cumsum(q)[:-1], 1e-12, 1 - 1e-12))


def _bilinear(a: np.ndarray, b: np.ndarray) -> float:
    """``sum a[x, y] * (b(x' > x, y' > y) - b(x' > x, y' < y))``; ``_bilinear(p, p)`` is half of tau-a."""
    ge = b[::-1, ::-1].cumsum(0).cumsum(1)[::-1, ::-1]
    le = b[::-1, :].cumsum(0)[::-1, :].cumsum(1)
    return float((a[:-1, :-1] * ge[1:, 1:]).sum() - (a[:-1, 1:] * le[1:, :-1]).sum())


def model_tau(h: np.ndarray, k: np.ndarray, r: float, grad: bool = False):
    """Population tau-a of two columns discretised at latent cut points ``h``, ``k`` of a Gaussian copula.

    With ``grad=True`` also returns d tau / d r (``d Phi2 / d r`` is the bivariate normal density).
    """
    if len(h) == 0 or len(k) == 0:
        return (0.0, 0.0) if grad else 0.0
    grid = np.zeros((len(h) + 2, len(k) + 2))
    grid[1:-1, 1:-1] = bvn_cdf(h, k, r)
    grid[-1, 1:-1] = ndtr(k)
    grid[1:-1, -1] = ndtr(h)
    grid[-1, -1] = 1.0
    cells = np.clip(np.diff(np.diff(grid, axis=0), axis=1), 0.0, None)
    tau = 2.0 * _bilinear(cells, cells)
    if not grad:
        return tau
    hh, kk = h[:, None], k[None, :]
    one = 1.0 - r * r
    dens = np.zeros_like(grid)
    dens[1:-1, 1:-1] = np.exp(-(hh * hh - 2 * r * hh * kk + kk * kk) / (2 * one)) / (2 * np.pi * math.sqrt(one))
    dcells = np.diff(np.diff(dens, axis=0), axis=1)
    return tau, 2.0 * (_bilinear(dcells, cells) + _bilinear(cells, dcells))


def bridge_correlation(tau_a: float, h: np.ndarray, k: np.ndarray, start: float) -> float:
    """Latent correlation whose discretised Gaussian copula has Kendall's tau-a ``tau_a``.

    Safeguarded Newton iterations from ``start`` (bisection when a step leaves
    the bracket). The model is fitted to its own ties: with coarse or
    unbalanced columns ``sin(pi tau / 2)`` is biased towards 0, and a feedback
    loop (refitting on synthetic data) would shrink every dependence
    generation after generation.
    """
    lim = 0.995
    lo, hi = -lim, lim
    r = float(np.clip(start, -0.99, 0.99))
    for _ in range(30):
        tau, slope = model_tau(h, k, r, grad=True)
        f = tau - tau_a
        if abs(f) < 1e-7:
            return r
        if f > 0:
            hi = r
        else:
            lo = r
        step = r - f / slope if slope > 1e-12 else None
        new = step if step is not None and lo < step < hi else (lo + hi) / 2
        if abs(new - r) < 1e-5:
            return float(new)
        r = new
    return float(r)


def kendall_tau_a(codes_x: np.ndarray, codes_y: np.ndarray, nx: int, ny: int, pad: int = 0) -> float:
    """Kendall's tau-a of two discretised columns, exactly, from their contingency table.

    ``tau_a = (concordant - discordant) / (n (n - 1) / 2)``; tied pairs count 0.
    The table is built with one ``bincount`` (O(n)) and the pair counts with
    two-dimensional cumulative sums (O(nx * ny)).

    Parameters
    ----------
    codes_x, codes_y : ndarray of int
        Cell indices (ordered: a larger cell is a larger value).
    nx, ny : int
        Number of cells of each column.
    pad : int, default=0
        Dummy people added in cell (0, 0) (see :class:`NPGCSynthesizer`, privacy).

    Returns
    -------
    float
    """
    table = np.bincount(codes_x * ny + codes_y, minlength=nx * ny).reshape(nx, ny).astype(float)
    if pad > 0:
        table[0, 0] += pad
    return _tau_from_table(table)


def all_pairs_tau_a(codes: np.ndarray, cells: np.ndarray, pad: int = 0) -> np.ndarray:
    """Kendall's tau-a of every pair ``(i < j)`` of columns, in ``np.triu_indices`` order.

    One ``bincount`` per column ``i`` builds the tables of ``i`` against all later
    columns at once (O(n d) per column), so the cost is O(n d^2 / 2 + sum of table sizes).
    ``pad`` dummy people are added to cell (0, 0) of every table.
    """
    n, d = codes.shape
    out = []
    for i in range(d - 1):
        later = cells[i + 1:]
        offs = np.concatenate([[0], np.cumsum(later)])
        width = int(offs[-1])
        keys = codes[:, i:i + 1] * width + (codes[:, i + 1:] + offs[:-1])
        block = np.bincount(keys.ravel(), minlength=int(cells[i]) * width).reshape(int(cells[i]), width)
        block = block.astype(float)
        for k in range(d - 1 - i):
            table = block[:, offs[k]:offs[k + 1]].copy()
            if pad > 0:
                table[0, 0] += pad
            out.append(_tau_from_table(table))
    return np.asarray(out, dtype=float)


def _pair_index(d: int) -> tuple[np.ndarray, np.ndarray]:
    return np.triu_indices(d, k=1)


def _tau_to_correlation(tau_a: np.ndarray, probs: list[np.ndarray], n: float, d: int) -> np.ndarray:
    """Latent correlation from tau-a (post-processing of tau and the marginals).

    First guess: normalise ties away (tau-b style, ``t_j = sum p_j^2``), then
    ``sin(pi tau_b / 2)`` -- exact for continuous columns and balanced binary
    ones. Pairs with a coarse column (``t_j > 0.1``) are then solved exactly:
    the correlation whose discretised copula reproduces tau-a
    (:func:`bridge_correlation`).
    """
    iu, ju = _pair_index(d)
    ties = np.array([float(np.sum(p ** 2)) for p in probs])
    denom = np.sqrt(np.clip(1.0 - ties[iu], 0.0, None) * np.clip(1.0 - ties[ju], 0.0, None))
    tau_b = np.where(denom > 1e-9, tau_a / np.where(denom > 1e-9, denom, 1.0), 0.0)
    r = np.sin(np.pi / 2.0 * np.clip(tau_b, -1.0, 1.0))
    cuts = [_thresholds(p) for p in probs]
    finite = (n - 1.0) / n if n > 1 else 1.0  # sample tau-a = population tau-a * n / (n - 1)
    for m, (i, j) in enumerate(zip(iu, ju)):
        if max(ties[i], ties[j]) > 0.1 and len(cuts[i]) and len(cuts[j]):
            r[m] = bridge_correlation(tau_a[m] * finite, cuts[i], cuts[j], r[m])
    corr = np.eye(d)
    corr[iu, ju] = r
    corr[ju, iu] = r
    return corr


@dataclass(frozen=True)
class NPGCColumnCells(ColumnGrid):
    """Public cells of one column, as :class:`ColumnGrid`, plus point cells at the bounds.

    Binned columns (continuous, datetime, wide integer ranges) get one cell for
    values exactly at the lower bound and one for values exactly at the upper
    bound around the ``n_bins`` equal-width bins: point masses at the bounds are
    common (zero amounts, values clipped to the public bounds) and would
    otherwise be smeared over a whole bin. The layout depends on the schema only.
    """

    bound_cells: bool = False

    @property
    def n_value_cells(self) -> int:
        """Number of cells holding values."""
        return ColumnGrid.n_value_cells.fget(self) + (2 if self.bound_cells else 0)

    def encode(self, values: pd.Series) -> np.ndarray:
        """Cell index of every value (vectorised; values must satisfy the schema)."""
        kind = self.spec.kind
        if kind in ("categorical", "boolean"):
            codes = pd.Categorical(values.to_numpy(dtype=object), categories=list(self.spec.categories)).codes
            codes = codes.astype(np.int64)
        else:
            x = _as_seconds(values) if kind == "datetime" else values.to_numpy(dtype=float)
            isna = np.isnan(x)
            codes = np.full(len(x), -1, dtype=np.int64)
            xv = x[~isna]
            if self.integer_values is not None:
                codes[~isna] = np.rint(xv).astype(np.int64) - int(self.integer_values[0])
            else:
                c = np.searchsorted(self.edges[1:-1], xv, side="right")
                if self.bound_cells:
                    c = np.where(xv <= self.edges[0], -1, np.where(xv >= self.edges[-1], len(self.edges) - 1, c)) + 1
                codes[~isna] = c
        missing = codes < 0
        if missing.any():
            if self.missing_cell is None:
                raise ValueError(f"column {self.spec.name!r} has missing values but is not nullable.")
            codes[missing] = self.missing_cell
        return codes

    def decode(self, codes: np.ndarray, rng: np.random.Generator, within: np.ndarray | None = None) -> pd.Series:
        """Values for cell indices (see :meth:`ColumnGrid.decode`); point cells give the bound itself."""
        if not self.bound_cells:
            return ColumnGrid.decode(self, codes, rng, within)
        n_bins = len(self.edges) - 1
        codes = np.asarray(codes)
        miss = codes == self.missing_cell if self.spec.nullable else np.zeros(len(codes), bool)
        at_lo, at_hi = codes == 0, codes == n_bins + 1
        inner = np.clip(codes - 1, 0, n_bins - 1)
        u = rng.random(len(codes)) if within is None else within
        lo, hi = self.edges[inner], self.edges[inner + 1]
        x = lo + u * (hi - lo)
        if self.spec.kind == "integer":
            x = np.clip(np.floor(x + 0.5 * (hi - lo > 0)), np.ceil(lo), np.floor(hi))
        x = np.where(at_lo, self.edges[0], np.where(at_hi, self.edges[-1], x))
        x[miss] = np.nan
        if self.spec.kind == "datetime":
            return seconds_to_datetime(x)
        return pd.Series(x)


def build_cells(schema, n_bins: int, max_integer_cells: int) -> tuple[NPGCColumnCells, ...]:
    """The public cell layout of every column of ``schema`` (nothing is read from data)."""
    cells = []
    for spec in schema.columns:
        if spec.kind in ("categorical", "boolean"):
            cells.append(NPGCColumnCells(spec, None, None))
            continue
        lo, hi = spec.numeric_bounds
        if spec.kind == "integer" and hi - lo + 1 <= max(max_integer_cells, n_bins):
            cells.append(NPGCColumnCells(spec, None, np.arange(int(lo), int(hi) + 1)))
            continue
        if hi == lo:
            hi = lo + 1.0
        cells.append(NPGCColumnCells(spec, np.linspace(lo, hi, n_bins + 1), None, bound_cells=True))
    return tuple(cells)


def _cdf(probabilities: np.ndarray) -> np.ndarray:
    """Cumulative probabilities whose tail after the last non-empty cell is exactly 1."""
    cum = np.cumsum(probabilities)
    positive = np.flatnonzero(probabilities > 0)
    last = positive[-1] if positive.size else len(cum) - 1
    cum[last:] = 1.0
    return cum


# ----------------------------------------------------------------------------------------------
# the synthesizer
# ----------------------------------------------------------------------------------------------
class NPGCSynthesizer(BaseTabularSynthesizer):
    """Non-parametric Gaussian copula (NPGC), differentially private end to end.

    Each column's distribution is kept as a histogram (noisy under DP, exact
    without), the dependence between columns as the correlation matrix of a
    Gaussian copula estimated from Kendall's tau. Sampling draws correlated
    normals, maps them to uniforms and inverts each column's CDF; missing
    values occupy the top slice of each column's unit interval, so that
    missingness keeps its relations with the other columns (papers/npgc-en.md).

    Parameters
    ----------
    epsilon : float or None, default=1.0
        Privacy budget per cohort (``fit`` or ``partial_fit`` call). ``None``:
        non-private "exact marginal preservation" -- the exact empirical CDF of
        every column is stored and sampled, the correlation is computed without
        noise, and the budget log says ``kind="none"``.
    delta : float, default=1e-6
        Per cohort. With ``delta > 0`` the model is accounted in zCDP (Gaussian
        noise); with ``delta=0`` it is pure epsilon-DP (geometric and Laplace
        noise; a ``schema`` with the categories is then needed).
    schema : TableSchema, dict, path or None, default=None
        Public domain (bounds, categories, nullability). When None it is
        estimated under DP with ``domain_share`` of the budget (or read from the
        data, non-privately, when ``epsilon=None``).
    n_bins : int, default=32
        Equal-width bins per continuous / datetime column, and per integer column
        whose range is wider than ``max_integer_cells``; binned columns also get
        one point cell at each bound (see :class:`NPGCColumnCells`).
    max_integer_cells : int, default=200
        Integer columns with at most this many values get one cell per value.
    marginal_share : float, default=0.5
        Share of the model's budget (what the domain leaves) spent on the
        marginals; the rest goes to the correlation. With one column everything
        goes to the marginal.
    domain_share : float, default=0.1
        Share of ``epsilon`` and ``delta`` spent on the domain when ``schema`` is None.
    stratified : bool, default=True
        Draw the rows of one ``sample`` call jointly so that every column's
        frequencies match the model's marginal to within one row ("exact
        marginal preservation": the uniform of the i-th smallest latent value is
        drawn in ``[i/n, (i+1)/n)``; the copula is unchanged). Removes the
        multinomial noise of i.i.d. sampling, which otherwise accumulates when
        synthetic data are refitted generation after generation. ``False``: i.i.d.
        rows, generated in chunks (bounded memory).
    cohort_composition : {"parallel", "sequential"}, default="parallel"
        How ``partial_fit`` cohorts compose: "parallel" when every cohort is a
        different set of people (the guarantee is the maximum over cohorts),
        "sequential" when people may appear in several (the sum).
    random_state : int, Generator or None, default=None
        Seeds all randomness (noise, fitting, sampling).

    Attributes
    ----------
    schema_ : TableSchema
        The domain used.
    cells_ : tuple of NPGCColumnCells
        The public cells of every column, laid out from the schema only (the
        last cell of a nullable column is "missing").
    cell_counts_ : list of ndarray
        Per column, the (noisy, summed over cohorts) cell counts.
    support_ : list of ndarray or None
        Non-private mode only: per numeric / datetime column the distinct
        observed values (the exact ECDF's support, missing last); ``None`` under DP.
    probabilities_ : list of ndarray
        Per column, the probabilities sampled from (grid cells, or ``support_``).
    correlation_ : ndarray of shape (n_columns, n_columns)
        Latent Gaussian correlation (positive definite).
    n_estimate_ : float
        Noisy (or exact, when non-private) number of people seen, all cohorts.
    cohort_sizes_ : list of float
        Noisy number of people of each cohort (weights of the correlation).
    budget_log_ : tuple of BudgetRecord
        One record per mechanism (plus the domain's records when estimated).

    Privacy
    -------
    Neighbouring relation: add or remove one person (one row). Protected: every
    value of every row, including whether it is missing and how many people
    there are. Public: the column names and dtypes, and ``schema`` when given.

    *Domain* -- from ``schema`` (free) or estimated under DP by the base class
    with ``domain_share`` of epsilon and delta (its records are in the log).

    *Marginals* -- each column's histogram over its public cells (the missing
    cell included) changes by 1 in one cell when a person is added or removed:
    L2 and L1 sensitivity 1. The d histograms are released together as one
    vector of L2 sensitivity ``sqrt(d)`` with the Gaussian mechanism at
    ``rho_m = marginal_share * rho`` (rho-zCDP, ``rho`` = what the domain
    leaves, :meth:`BudgetAccountant.remaining_rho`); with ``delta=0`` the
    two-sided geometric mechanism on the same vector (L1 sensitivity d) at
    ``marginal_share`` of the pure epsilon.

    *Row count* -- ``n`` is never read directly. Every column's noisy histogram
    sums to ``n`` plus noise; their inverse-variance average ``n_hat`` is
    post-processing, and ``a = max(2, floor(n_hat - 3 sd))`` is a public
    (already released) number.

    *Dependence* -- Kendall's tau-a of every pair of columns on their grid
    cells (ties count 0; missing is the largest cell), computed on the data
    *padded* with ``max(0, a - n)`` dummy people in cell (0, 0), so that the
    query always sees at least ``a`` people. Sensitivity, per pair:
    tau-a is ``S / C(m, 2)`` with ``S`` = concordant minus discordant pairs and
    ``|S| <= C(m, 2)``. Replacing one person changes at most ``m - 1`` pair
    terms by at most 2 each: ``|dtau| <= 2 (m - 1) / C(m, 2) = 4 / m``. Adding a
    person (m -> m + 1) adds a term ``s`` with ``|s| <= m``:
    ``tau - tau' = 4 S / (m (m - 1)(m + 1)) - 2 s / (m (m + 1))``, each part at
    most ``2 / (m + 1)``, so ``|dtau| <= 4 / (m + 1)``. With padding, two
    neighbours are either both unpadded (m >= a: ``4 / (m + 1) < 4 / a``) or
    both of size ``a`` differing in one person replacing one dummy (``4 / a``):
    the padded query has sensitivity ``4 / a`` *for every* ``a``, so no failure
    probability enters delta (padding only biases tau when ``n < a``, which
    happens with probability about 0.1 %). The vector of the ``P = d (d - 1) / 2``
    pairs (one person moves all of them) gets the Gaussian mechanism with L2
    sensitivity ``sqrt(P) * 4 / a`` at ``rho_c = rho - rho_m`` (or Laplace
    with L1 sensitivity ``P * 4 / a`` when ``delta=0``).

    *Post-processing* (free): noisy counts are projected onto the simplex of
    total ``n_hat``; the latent correlation is ``sin(pi tau_b / 2)`` with ties
    normalised by the noisy marginals, refined for pairs with a coarse column
    by the exact bridge (the correlation whose discretised copula, with the
    noisy marginals, has the noisy tau-a: :func:`bridge_correlation`); the
    matrix is repaired to the nearest correlation matrix (eigenvalue clipping,
    unit diagonal); samples are ``z ~ N(0, R)`` mapped to uniforms (``Phi(z)``,
    or rank-stratified when ``stratified=True``) and inverted through the noisy
    CDFs with a uniform position inside each cell.

    *Accounting* -- one record per mechanism: rho_m + rho_c = rho, converted
    once to (epsilon, delta - delta_domain) (Canonne, Kamath & Steinke 2020) and
    added to the domain's spend: the cohort's spend never exceeds
    (``epsilon``, ``delta``). *Cohorts* -- ``partial_fit`` spends a fresh
    (``epsilon``, ``delta``) on the new cohort's data only and adds its noisy
    counts to the old ones; the correlation is the average of the cohorts'
    correlations weighted by their noisy sizes (post-processing). When cohorts
    are different people the guarantee is the maximum over cohorts
    ("parallel"), otherwise their sum ("sequential").

    Why the PyPI reference ``npgc`` 0.3.0 is not DP: each column's marginal
    spends eps/2 on the same people (d columns compose to d * eps / 2); the
    support, min/max, category labels and NaN fraction are read without noise;
    the correlation's noise assumes a sensitivity of 2/n for Pearson
    correlations of normal scores, which does not hold (one person moves every
    rank, and normal scores are unbounded), and each of the d^2 entries spends
    eps/2.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from skdpsynth import NPGCSynthesizer, TableSchema
    >>> rng = np.random.default_rng(0)
    >>> X = pd.DataFrame({"score": rng.normal(60, 10, 500).clip(0, 100),
    ...                   "passed": rng.random(500) < 0.7})
    >>> schema = TableSchema.from_dict({"score": {"kind": "continuous", "lower": 0, "upper": 100},
    ...                                 "passed": {"kind": "boolean"}})
    >>> synth = NPGCSynthesizer(epsilon=1.0, schema=schema, random_state=0).fit(X)
    >>> synth.sample(3, random_state=0).shape
    (3, 2)
    >>> synth.privacy_spent_.epsilon <= 1.0
    True
    """

    def __init__(self, *, epsilon=1.0, delta=1e-6, schema=None, n_bins=32, max_integer_cells=200,
                 marginal_share=0.5, domain_share=0.1, stratified=True, cohort_composition="parallel",
                 random_state=None):
        self.epsilon = epsilon
        self.delta = delta
        self.schema = schema
        self.n_bins = n_bins
        self.max_integer_cells = max_integer_cells
        self.marginal_share = marginal_share
        self.domain_share = domain_share
        self.stratified = stratified
        self.cohort_composition = cohort_composition
        self.random_state = random_state

    # -- validation (before any budget) ---------------------------------------------------
    def _check_params(self) -> None:
        for name, low in (("n_bins", 2), ("max_integer_cells", 1)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {v!r}.")
        for name in ("marginal_share", "domain_share"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float, np.floating)) or not 0 < v < 1:
                raise ValueError(f"{name} must be a number strictly between 0 and 1, got {v!r}.")
        if not isinstance(self.stratified, (bool, np.bool_)):
            raise ValueError(f"stratified must be True or False, got {self.stratified!r}.")
        if self.cohort_composition not in ("parallel", "sequential"):
            raise ValueError(
                f"cohort_composition must be 'parallel' or 'sequential', got {self.cohort_composition!r}.")

    def _check_input(self, X: Any, y: Any, reset: bool) -> pd.DataFrame:
        self._check_params()
        return super()._check_input(X, y, reset)

    def _planned_model_cost(self, X: pd.DataFrame, eps_dom: float, delta_dom: float) -> list[BudgetRecord]:
        eps_left = self.epsilon - eps_dom
        delta_left = self.delta - delta_dom
        if eps_left <= 0:
            return [BudgetRecord("geometric", "NPGC model", "pure", epsilon=max(eps_left, 0.0) + 1e-12)]
        if delta_left > 0:
            return [BudgetRecord("gaussian", "NPGC marginals and correlation", "zcdp",
                                 rho=approx_dp_to_zcdp(eps_left, delta_left))]
        return [BudgetRecord("geometric+laplace", "NPGC marginals and correlation", "pure", epsilon=eps_left)]

    # -- fitting ------------------------------------------------------------------------
    def _fit_table(self, X: pd.DataFrame, accountant: BudgetAccountant, rngs: dict, first: bool) -> None:
        if first:
            self.cells_ = build_cells(self.schema_, self.n_bins, self.max_integer_cells)
            self.cell_counts_ = [np.zeros(g.n_cells) for g in self.cells_]
            self._ecdf = [None if g.spec.kind in ("categorical", "boolean") else {} for g in self.cells_]
            self._exact_only = True
            self.cohort_sizes_ = []
            self._cohort_correlations = []
        cells = np.array([g.n_cells for g in self.cells_])
        d = len(cells)
        codes = np.column_stack([g.encode(X[g.spec.name]) for g in self.cells_])
        offsets = np.concatenate([[0], np.cumsum(cells)])
        exact = np.bincount((codes + offsets[:-1]).ravel(), minlength=int(offsets[-1])).astype(float)

        if accountant.private:
            counts, n_hat, a = self._noisy_marginals(exact, cells, offsets, accountant, rngs["noise"])
        else:
            counts, n_hat, a = exact, float(len(X)), len(X)
            accountant.spend(BudgetRecord(
                "exact (non-private)", f"histograms of all {d} columns (exact empirical marginals)", "none",
                epsilon=math.inf))
            self._update_ecdf(X)
        if accountant.private:
            self._exact_only = False

        per_col = [counts[offsets[j]:offsets[j + 1]] for j in range(d)]
        probs = [project_to_simplex(c, max(n_hat, 1.0)) / max(n_hat, 1.0) if accountant.private
                 else c / max(c.sum(), 1.0) for c in per_col]

        corr = np.eye(d)
        if d > 1:
            pad = max(0, int(a) - len(X)) if accountant.private else 0
            tau = all_pairs_tau_a(codes, cells, pad)
            if accountant.private:
                tau = self._noisy_tau(tau, a, accountant, rngs["noise"])
            else:
                accountant.spend(BudgetRecord(
                    "exact (non-private)", f"Kendall's tau of all {len(tau)} column pairs", "none", epsilon=math.inf))
            corr = _tau_to_correlation(np.clip(tau, -1.0, 1.0), probs, n_hat, d)

        # fold the cohort in (post-processing)
        self.cell_counts_ = [old + new for old, new in zip(self.cell_counts_, per_col)]
        self.cohort_sizes_ = [*self.cohort_sizes_, float(n_hat)]
        self._cohort_correlations = [*self._cohort_correlations, corr]
        self._refresh()

    def _noisy_marginals(self, exact, cells, offsets, accountant, rng):
        """Noisy histograms of all columns in one mechanism; returns (counts, n_hat, a)."""
        d = len(cells)
        spent_eps = sum(r.epsilon for r in accountant.records if r.kind in ("pure", "approx"))
        share = self.marginal_share if d > 1 else 1.0
        target = f"histograms of all {d} columns on the public grid ({int(offsets[-1])} cells)"
        if accountant.delta_zcdp > 0:
            rho = accountant.remaining_rho(spent_pure=spent_eps)
            self._rho_split = (rho * share, rho - rho * share)
            plan = [BudgetRecord("gaussian", target, "zcdp", rho=self._rho_split[0])]
            if d > 1:
                plan.append(BudgetRecord("gaussian", "Kendall's tau of all column pairs", "zcdp",
                                         rho=self._rho_split[1]))
            accountant.require(plan, what=f"{type(self).__name__}.fit")
            sens = math.sqrt(d)
            noisy = gaussian_mechanism(exact, l2_sensitivity=sens, rho=self._rho_split[0], rng=rng,
                                       accountant=accountant, target=target)
            var_cell = gaussian_sigma(sens, self._rho_split[0]) ** 2
        else:
            eps_left = self.epsilon - spent_eps
            self._eps_split = (eps_left * share, eps_left - eps_left * share)
            plan = [BudgetRecord("geometric", target, "pure", epsilon=self._eps_split[0])]
            if d > 1:
                plan.append(BudgetRecord("laplace", "Kendall's tau of all column pairs", "pure",
                                         epsilon=self._eps_split[1]))
            accountant.require(plan, what=f"{type(self).__name__}.fit")
            noisy = geometric_mechanism(exact, sensitivity=float(d), epsilon=self._eps_split[0], rng=rng,
                                        accountant=accountant, target=target).astype(float)
            alpha = math.exp(-self._eps_split[0] / d)
            var_cell = 2 * alpha / (1 - alpha) ** 2
        # every column's noisy histogram sums to n + noise: inverse-variance average (post-processing)
        sums = np.add.reduceat(noisy, offsets[:-1])
        w = 1.0 / np.asarray(cells, dtype=float)
        n_hat = float(np.sum(w * sums) / w.sum())
        sd = math.sqrt(var_cell / w.sum())
        a = max(2, int(math.floor(n_hat - _N_BOUND_Z * sd)))
        logger.debug("NPGC: noisy n %.1f (sd %.2f), public size of the tau query %d", n_hat, sd, a)
        return noisy, max(n_hat, 0.0), a

    def _noisy_tau(self, tau, a, accountant, rng):
        n_pairs = len(tau)
        target = f"Kendall's tau of all {n_pairs} column pairs (padded to at least {a} people)"
        if accountant.delta_zcdp > 0:
            return gaussian_mechanism(tau, l2_sensitivity=math.sqrt(n_pairs) * 4.0 / a, rho=self._rho_split[1],
                                      rng=rng, accountant=accountant, target=target)
        return laplace_mechanism(tau, sensitivity=n_pairs * 4.0 / a, epsilon=self._eps_split[1], rng=rng,
                                 accountant=accountant, target=target)

    def _update_ecdf(self, X: pd.DataFrame) -> None:
        """Exact empirical CDFs of numeric / datetime columns (non-private mode only)."""
        for j, g in enumerate(self.cells_):
            if self._ecdf[j] is None:
                continue
            col = X[g.spec.name]
            vals = col.dropna().to_numpy()
            if g.spec.kind == "datetime":
                vals = vals.astype("datetime64[ns]")
            else:
                vals = vals.astype(float)
            uniq, cnt = np.unique(vals, return_counts=True)
            old = self._ecdf[j]
            if old:
                uniq, inv = np.unique(np.concatenate([old["values"], uniq]), return_inverse=True)
                cnt = np.bincount(inv, weights=np.concatenate([old["counts"], cnt]))
            self._ecdf[j] = {"values": uniq, "counts": cnt.astype(float),
                             "missing": (old.get("missing", 0.0) if old else 0.0) + float(col.isna().sum())}

    def _refresh(self) -> None:
        """Recompute the sampling state from the accumulated statistics (post-processing)."""
        total = float(sum(self.cohort_sizes_))
        self.n_estimate_ = total
        self.support_ = None
        probs = []
        for c in self.cell_counts_:
            if self._exact_only:
                probs.append(c / max(c.sum(), 1.0))
            else:
                probs.append(project_to_simplex(c, max(total, 1.0)) / max(total, 1.0))
        if self._exact_only:
            support = []
            for j, g in enumerate(self.cells_):
                e = self._ecdf[j]
                if e is None:
                    support.append(None)
                    continue
                missing_value = np.array(["NaT"], dtype="datetime64[ns]") if g.spec.kind == "datetime" else [np.nan]
                support.append(np.concatenate([e["values"], missing_value]))
                c = np.concatenate([e["counts"], [e["missing"]]])
                probs[j] = c / max(c.sum(), 1.0)
            self.support_ = support
        self.probabilities_ = probs
        self._cum = [_cdf(p) for p in probs]
        self._lower = [np.concatenate([[0.0], c[:-1]]) for c in self._cum]
        self._zcut = [ndtri(c) for c in self._cum]
        self._last = [int(np.flatnonzero(p > 0)[-1]) if np.any(p > 0) else len(p) - 1 for p in probs]
        self._numeric_categories = [self._numeric_lookup(g) for g in self.cells_]
        weights = np.maximum(np.asarray(self.cohort_sizes_, dtype=float), 1.0)
        corr = sum(w * c for w, c in zip(weights, self._cohort_correlations)) / weights.sum()
        self.correlation_ = nearest_correlation(corr)
        self._chol = _cholesky(self.correlation_)

    def _numeric_lookup(self, g: NPGCColumnCells) -> np.ndarray | None:
        """Float lookup of a categorical column whose input dtype and categories are numbers (fast path)."""
        dtype = getattr(self, "dtypes_", {}).get(g.spec.name, "object")
        if g.spec.kind != "categorical" or not dtype.startswith(("int", "uint", "float", "Int", "UInt", "Float")):
            return None
        cats = g.spec.categories
        if not all(isinstance(c, (int, float, np.integer, np.floating)) and not isinstance(c, bool) for c in cats):
            return None
        return np.array([*cats, np.nan] if g.spec.nullable else list(cats), dtype=float)

    # -- sampling -----------------------------------------------------------------------
    def _sample_table(self, n_samples: int, rng: np.random.Generator) -> pd.DataFrame:
        d = len(self.cells_)
        exact = [self.support_ is not None and self.support_[j] is not None for j in range(d)]
        binned = [not exact[j] and g.edges is not None for j, g in enumerate(self.cells_)]
        codes = np.empty((d, n_samples), dtype=np.int64)
        within = {j: np.empty(n_samples) for j in range(d) if binned[j]}
        if self.stratified:
            gauss = rng.standard_normal((d, n_samples))
            for j in range(d):
                # rank-stratified uniforms: the i-th smallest z of column j gets u in [i/n, (i+1)/n), so each
                # column's sampled frequencies match the model's marginal to within one row, while the ranks
                # (hence the Gaussian copula) are those of z ~ N(0, R)
                zj = self._chol[j, : j + 1] @ gauss[: j + 1]
                u = np.empty(n_samples)
                u[np.argsort(zj)] = (np.arange(n_samples) + rng.random(n_samples)) / n_samples
                c = np.minimum(np.searchsorted(self._cum[j], u, side="right"), self._last[j])
                codes[j] = c
                if binned[j]:
                    p = self.probabilities_[j][c]
                    w = (u - self._lower[j][c]) / np.where(p > 0, p, 1.0)
                    within[j] = np.clip(w, 0.0, np.nextafter(1.0, 0.0))
        for start in range(0, n_samples if not self.stratified else 0, _CHUNK):  # i.i.d. rows, bounded memory
            stop = min(start + _CHUNK, n_samples)
            zt = self._chol @ rng.standard_normal((stop - start, d)).T  # (d, chunk): one contiguous row per column
            for j in range(d):
                # u = Phi(z) falls in cell c  <=>  z falls between the cut points Phi^-1(cum)
                c = np.minimum(np.searchsorted(self._zcut[j], zt[j], side="right"), self._last[j])
                codes[j, start:stop] = c
                if binned[j]:
                    p = self.probabilities_[j][c]
                    w = (ndtr(zt[j]) - self._lower[j][c]) / np.where(p > 0, p, 1.0)
                    within[j][start:stop] = np.clip(w, 0.0, np.nextafter(1.0, 0.0))
        out = {}
        for j, g in enumerate(self.cells_):
            name = g.spec.name
            if exact[j]:
                out[name] = self.support_[j][codes[j]]
            elif g.spec.kind == "categorical" and self._numeric_categories[j] is not None:
                out[name] = self._numeric_categories[j][codes[j]]  # restored to the input's numeric dtype
            else:
                out[name] = g.decode(codes[j], rng, within.get(j, _NO_WITHIN)).to_numpy()
        return pd.DataFrame(out, copy=False)
