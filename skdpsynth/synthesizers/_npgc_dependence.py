"""NPGC's dependence: Kendall's tau of every column pair, its private release, and the latent correlation.

* Exact pair counts: ``S`` = concordant minus discordant pairs of two
  discretised columns, an integer computed from their contingency table
  (:func:`concordance`, :func:`all_pairs_concordance`).
* The private release: :func:`noisy_kendall_tau` (integer noise on an integer
  numerator; the sensitivity argument is in its docstring).
* Post-processing: tau-a to the latent correlation of a Gaussian copula, with
  the tie-aware bridge for coarse columns (:func:`tau_to_correlation`), the
  repair to the nearest correlation matrix (:func:`nearest_correlation`), and
  the copula over the (noisy) marginals that samples cells (:class:`GaussianCopula`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
from scipy.special import ndtr, ndtri, owens_t

from skdpsynth.privacy._accounting import BudgetAccountant
from skdpsynth.privacy._mechanisms import discrete_gaussian_mechanism, geometric_mechanism
from skdpsynth.privacy._noise import NoiseSource

__all__ = ["concordance", "kendall_tau_a", "all_pairs_concordance", "all_pairs_tau_a", "public_numerator",
           "noisy_kendall_tau", "tau_to_correlation", "bridge_correlation", "model_tau", "bvn_cdf",
           "nearest_correlation", "cholesky", "GaussianCopula"]

#: smallest eigenvalue kept by the nearest-correlation repair
_EIG_FLOOR = 1e-6
#: rows drawn at a time by i.i.d. sampling
_CHUNK = 1 << 16


# ---------------------------------------------------------------------------------------- exact pair counts
def _bilinear(a: np.ndarray, b: np.ndarray):
    """``sum a[x, y] * (b(x' > x, y' > y) - b(x' > x, y' < y))``; ``_bilinear(t, t)`` is ``S`` of table ``t``.

    ``ge[i, l]`` counts ``x >= i, y >= l`` and ``le[i, l]`` counts ``x >= i, y <= l`` (2-D cumulative sums), so
    the cost is O(cells). Integer tables give an exact integer.
    """
    ge = b[::-1, ::-1].cumsum(0).cumsum(1)[::-1, ::-1]
    le = b[::-1, :].cumsum(0)[::-1, :].cumsum(1)
    return (a[:-1, :-1] * ge[1:, 1:]).sum() - (a[:-1, 1:] * le[1:, :-1]).sum()


def concordance(table: np.ndarray) -> int:
    """Concordant minus discordant pairs ``S`` of a contingency table (rows and columns ordered), exactly.

    Tied pairs (same row or same column) count 0.
    """
    t = np.asarray(table, dtype=np.int64)
    if t.shape[0] < 2 or t.shape[1] < 2:
        return 0
    return int(_bilinear(t, t))


def _table(codes_x: np.ndarray, codes_y: np.ndarray, nx: int, ny: int) -> np.ndarray:
    return np.bincount(codes_x * ny + codes_y, minlength=nx * ny).reshape(nx, ny)


def kendall_tau_a(codes_x: np.ndarray, codes_y: np.ndarray, nx: int, ny: int, pad: int = 0) -> float:
    """Kendall's tau-a ``S / C(m, 2)`` of two columns of cell indices (``nx``, ``ny`` cells, ordered).

    ``m`` is the number of people plus ``pad`` dummies in cell (0, 0) (see :func:`noisy_kendall_tau`).
    """
    table = _table(np.asarray(codes_x), np.asarray(codes_y), nx, ny)
    table[0, 0] += pad
    m = len(codes_x) + pad
    return concordance(table) / math.comb(m, 2) if m >= 2 else 0.0


def _pair_tables(codes: np.ndarray, cells: np.ndarray) -> Iterator[np.ndarray]:
    """Contingency tables of every pair ``(i < j)`` of columns, in ``np.triu_indices`` order.

    One ``bincount`` per column ``i`` builds its tables against all later columns at once (O(n d) per column).
    """
    d = codes.shape[1]
    for i in range(d - 1):
        offs = np.concatenate([[0], np.cumsum(cells[i + 1:])])
        width = int(offs[-1])
        keys = codes[:, i:i + 1] * width + (codes[:, i + 1:] + offs[:-1])
        block = np.bincount(keys.ravel(), minlength=int(cells[i]) * width).reshape(int(cells[i]), width)
        for k in range(d - 1 - i):
            yield block[:, offs[k]:offs[k + 1]]


def all_pairs_concordance(codes: np.ndarray, cells: np.ndarray, pad: int = 0) -> np.ndarray:
    """``S`` of every pair of columns (``np.triu_indices`` order), with ``pad`` dummies in cell (0, 0); int64."""
    out = []
    for table in _pair_tables(codes, cells):
        if pad > 0:
            table = table.copy()
            table[0, 0] += pad
        out.append(concordance(table))
    return np.asarray(out, dtype=np.int64)


def all_pairs_tau_a(codes: np.ndarray, cells: np.ndarray, pad: int = 0) -> np.ndarray:
    """Kendall's tau-a of every pair of columns (exact; used without noise in the non-private mode)."""
    m = codes.shape[0] + pad
    s = all_pairs_concordance(codes, cells, pad)
    return s / math.comb(m, 2) if m >= 2 else np.zeros(len(s))


def public_numerator(s: np.ndarray, m: int, a: int) -> np.ndarray:
    """``S`` re-expressed on the public number of pairs ``C(a, 2)``: ``floor(S C(a, 2) / C(m, 2) + 1/2)``.

    Computed in exact integer arithmetic. It is ``S`` itself when ``m = a``.
    Rounding half up is monotone and commutes with integer shifts, so an
    integer bound on how far the unrounded value moves also bounds the rounded
    one (:func:`noisy_kendall_tau`).
    """
    ca, cm = math.comb(a, 2), math.comb(m, 2)
    return np.array([(2 * int(v) * ca + cm) // (2 * cm) for v in s], dtype=np.int64)


# ---------------------------------------------------------------------------------------- private release
def noisy_kendall_tau(codes: np.ndarray, cells: np.ndarray, a: int, *, noise: NoiseSource,
                      accountant: BudgetAccountant, rho: float | None = None,
                      epsilon: float | None = None) -> np.ndarray:
    """Kendall's tau-a of all ``P`` column pairs, released with integer noise; rho-zCDP (or epsilon-DP).

    Neighbouring relation: add or remove one person (one row).

    *Query.* The data are padded with ``max(0, a - n)`` dummy people in cell
    (0, 0), so the query sees ``m = max(n, a)`` people, where ``a >= 2`` is
    public (derived from already released counts). Per pair, ``tau = S /
    C(m, 2)`` and the released integer is ``q = round(tau C(a, 2))``
    (:func:`public_numerator`): ``S`` itself whenever ``n <= a``.

    *Sensitivity of q: 2 (a - 1) per pair.* Let ``D' = D + one person``, ``|D|
    = n``. (i) ``n < a``: both are padded to exactly ``a`` people and ``D'``
    replaces one dummy by the person. That person's ``a - 1`` pair terms (each
    -1, 0 or +1) change by at most 2 each, the others not at all, so ``|dS| <=
    2 (a - 1)``, which is tight (with ``a - 1`` people at cell (1, 1), the
    dummy is concordant with all of them and a person at (2, 0) discordant
    with all). Since ``m = a``, ``q = S``: ``|dq| <= 2 (a - 1)``.
    (ii) ``n >= a``: no padding, ``m = n -> n + 1``. With ``|S| <= C(n, 2)``
    and the new person's terms ``s``, ``|s| <= n``, ``tau - tau' = 4 S / (n (n
    - 1)(n + 1)) - 2 s / (n (n + 1))``, each part at most ``2 / (n + 1)``, so
    ``|dtau| <= 4 / (n + 1) < 4 / a`` and ``|d(tau C(a, 2))| < 2 (a - 1)``.
    In both cases the unrounded value moves by at most the integer ``K = 2 (a
    - 1)``, hence so does ``q`` (rounding half up is monotone and commutes
    with integer shifts). The raw ``S`` would not do: it moves by up to ``n``
    when ``n >= a``, a private and unbounded sensitivity; rescaling to the
    public ``C(a, 2)`` pairs bounds it. On the tau scale: ``4 / a`` per pair.

    *Mechanism.* One person moves every pair, so the vector ``q`` has L2
    sensitivity ``sqrt(P) 2 (a - 1)`` (discrete Gaussian, rho-zCDP) and L1
    sensitivity ``P 2 (a - 1)`` (two-sided geometric, epsilon-DP, when
    ``epsilon`` is given instead of ``rho``). There is no failure probability:
    the bound holds for every ``a``; padding only biases tau towards 0 in the
    rare event ``n < a``. The noisy integers are divided by the public
    ``C(a, 2)`` (post-processing).

    Parameters
    ----------
    codes : ndarray of int, shape (n, d)
        Cell of every value (private).
    cells : ndarray of int, shape (d,)
        Number of cells of each column (public).
    a : int
        Public lower size of the query (>= 2).
    noise, accountant
        Where the noise comes from and where the cost is charged.
    rho, epsilon : float
        Exactly one: the zCDP or pure-DP cost.

    Returns
    -------
    ndarray of float
        Noisy tau-a of every pair (``np.triu_indices`` order), not clipped.
    """
    a = int(a)
    if a < 2 or (rho is None) == (epsilon is None):
        raise ValueError("noisy_kendall_tau needs a >= 2 and exactly one of rho and epsilon.")
    n = codes.shape[0]
    m = max(n, a)
    q = public_numerator(all_pairs_concordance(codes, cells, pad=m - n), m, a)
    p, k = len(q), 2 * (a - 1)
    target = (f"Kendall's tau of all {p} column pairs (padded to at least {a} people; concordant minus "
              f"discordant pairs on C({a}, 2) pairs)")
    if rho is not None:
        noisy = discrete_gaussian_mechanism(q, l2_sensitivity=math.sqrt(p) * k, rho=rho, noise=noise,
                                            accountant=accountant, target=target)
    else:
        noisy = geometric_mechanism(q, sensitivity=float(p * k), epsilon=epsilon, noise=noise,
                                    accountant=accountant, target=target)
    return noisy / math.comb(a, 2)


# ---------------------------------------------------------------------------------------- tau -> correlation
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
    tau = 2.0 * float(_bilinear(cells, cells))
    if not grad:
        return tau
    hh, kk = h[:, None], k[None, :]
    one = 1.0 - r * r
    dens = np.zeros_like(grid)
    dens[1:-1, 1:-1] = np.exp(-(hh * hh - 2 * r * hh * kk + kk * kk) / (2 * one)) / (2 * np.pi * math.sqrt(one))
    dcells = np.diff(np.diff(dens, axis=0), axis=1)
    return tau, 2.0 * float(_bilinear(dcells, cells) + _bilinear(cells, dcells))


def bridge_correlation(tau_a: float, h: np.ndarray, k: np.ndarray, start: float) -> float:
    """Latent correlation whose discretised Gaussian copula has Kendall's tau-a ``tau_a``.

    Safeguarded Newton iterations from ``start`` (bisection when a step leaves
    the bracket). The model is fitted to its own ties: with coarse or
    unbalanced columns ``sin(pi tau / 2)`` is biased towards 0, and a feedback
    loop (refitting on synthetic data) would shrink every dependence
    generation after generation.
    """
    lo, hi = -0.995, 0.995
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


def tau_to_correlation(tau_a: np.ndarray, probs: list[np.ndarray], n: float, d: int) -> np.ndarray:
    """Latent correlation (d, d) from tau-a of every pair (``np.triu_indices`` order); post-processing.

    First guess: normalise ties away (tau-b style, ``t_j = sum p_j^2`` from
    the cell probabilities ``probs``), then ``sin(pi tau_b / 2)`` -- exact for
    continuous columns and balanced binary ones. Pairs with a coarse column
    (``t_j > 0.1``) are then solved exactly: the correlation whose discretised
    copula reproduces tau-a (:func:`bridge_correlation`), with the finite-sample
    factor ``(n - 1) / n`` of tau-a (``n``: the noisy number of people).
    """
    iu, ju = np.triu_indices(d, k=1)
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


def nearest_correlation(matrix: np.ndarray, floor: float = _EIG_FLOOR) -> np.ndarray:
    """Nearest correlation matrix to a symmetric estimate: eigenvalues clipped at ``floor`` (> 0), unit diagonal."""
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


def cholesky(corr: np.ndarray) -> np.ndarray:
    """Cholesky factor of a correlation matrix (repaired first if it is numerically not positive definite)."""
    try:
        return np.linalg.cholesky(corr)
    except np.linalg.LinAlgError:  # pragma: no cover - nearest_correlation keeps eigenvalues >= floor
        return np.linalg.cholesky(nearest_correlation(corr, floor=1e-4))


# ---------------------------------------------------------------------------------------- sampling
def _cdf(probabilities: np.ndarray) -> np.ndarray:
    """Cumulative probabilities whose tail after the last non-empty cell is exactly 1."""
    cum = np.cumsum(probabilities)
    positive = np.flatnonzero(probabilities > 0)
    last = positive[-1] if positive.size else len(cum) - 1
    cum[last:] = 1.0
    return cum


class GaussianCopula:
    """Gaussian copula over discretised marginals: latent ``z ~ N(0, R)``, each column cut at ``Phi^-1(CDF)``.

    Built from released statistics only: a latent ``correlation`` estimate
    (repaired to the nearest correlation matrix) and each column's cell
    ``probabilities``.
    """

    def __init__(self, correlation: np.ndarray, probabilities: list[np.ndarray]) -> None:
        self.correlation = nearest_correlation(correlation)
        self.chol = cholesky(self.correlation)
        self.probabilities = probabilities
        self.cum = [_cdf(p) for p in probabilities]
        self.lower = [np.concatenate([[0.0], c[:-1]]) for c in self.cum]
        self.zcut = [ndtri(c) for c in self.cum]
        self.last = [int(np.flatnonzero(p > 0)[-1]) if np.any(p > 0) else len(p) - 1 for p in probabilities]

    def _within(self, j: int, codes: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Position inside the cell, ``(u - F(c-)) / p(c)``: uniform given the cell, monotone in ``u``."""
        p = self.probabilities[j][codes]
        return np.clip((u - self.lower[j][codes]) / np.where(p > 0, p, 1.0), 0.0, np.nextafter(1.0, 0.0))

    def cells(self, n: int, rng: np.random.Generator, *, stratified: bool,
              positions_for: list[int]) -> tuple[np.ndarray, dict[int, np.ndarray]]:
        """Cells of ``n`` rows, and the position inside its cell for the columns in ``positions_for``.

        ``stratified=True``: rank-stratified uniforms -- the i-th smallest
        latent value of a column gets ``u`` in ``[i/n, (i+1)/n)``, so each
        column's frequencies match its marginal to within one row while the
        ranks (hence the copula) are those of ``z``. Otherwise i.i.d. rows in
        chunks (bounded memory); ``u = Phi(z)`` falls in cell ``c`` exactly when
        ``z`` lies between the cut points, so ``Phi`` is evaluated only for
        ``positions_for``.

        Returns
        -------
        codes : ndarray of int64, shape (d, n)
        within : dict of int to ndarray
        """
        d = self.chol.shape[0]
        codes = np.empty((d, n), dtype=np.int64)
        within = {j: np.empty(n) for j in positions_for}
        if stratified:
            gauss = rng.standard_normal((d, n))
            for j in range(d):
                zj = self.chol[j, : j + 1] @ gauss[: j + 1]
                u = np.empty(n)
                u[np.argsort(zj)] = (np.arange(n) + rng.random(n)) / n
                codes[j] = np.minimum(np.searchsorted(self.cum[j], u, side="right"), self.last[j])
                if j in within:
                    within[j] = self._within(j, codes[j], u)
            return codes, within
        for start in range(0, n, _CHUNK):
            stop = min(start + _CHUNK, n)
            zt = self.chol @ rng.standard_normal((stop - start, d)).T  # (d, chunk): one contiguous row per column
            for j in range(d):
                c = np.minimum(np.searchsorted(self.zcut[j], zt[j], side="right"), self.last[j])
                codes[j, start:stop] = c
                if j in within:
                    within[j][start:stop] = self._within(j, c, ndtr(zt[j]))
        return codes, within
