"""NPGC's bridge from Kendall's tau to the latent correlation, and the correlation matrix built from it.

Everything here is post-processing of released statistics (noisy tau, noisy
marginals): no private data, no budget.

* Tie-free pairs: the closed form ``tau = (2 / pi) arcsin(r)`` (Kendall's tau
  of a bivariate normal), with the ties of each column normalised away (tau-b).
* Pairs with a coarse column: the tau of the Gaussian copula discretised at the
  column's cut points is a power series in ``r`` whose coefficients factor over
  the two columns (Mehler's expansion of the bivariate normal density in Hermite
  polynomials, :class:`HermiteMoments`). Its coefficients are computed once per
  pair, then all pairs are solved at once by safeguarded Newton steps on the
  polynomials (:func:`solve_polynomials`) -- no bivariate normal CDF at all.
* A partly measured correlation matrix is completed by maximum entropy with
  soft constraints (:func:`soft_completion`); any symmetric estimate is repaired
  by eigenvalue clipping (:func:`nearest_correlation`).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtr, ndtri

__all__ = ["HermiteMoments", "PairBridge", "horner", "horner_slope", "solve_polynomials", "soft_completion",
           "soft_completion_precision", "nearest_correlation", "cholesky", "column_ties"]

#: Hermite terms of the expansion (tau error < 1e-4 for |r| <= 0.95, < 1e-6 for |r| <= 0.9)
N_TERMS = 48
#: columns whose chance of a tie (sum of squared cell probabilities) exceeds this are bridged exactly
COARSE_TIES = 0.1
#: correlations are solved in [-R_MAX, R_MAX]
R_MAX = 0.995
#: smallest eigenvalue kept by the nearest-correlation repair
EIG_FLOOR = 1e-6


def column_ties(p: np.ndarray) -> float:
    """Chance that two people share a cell: ``sum p_c^2``."""
    p = np.asarray(p, dtype=float)
    s = p.sum()
    return float(np.sum((p / s) ** 2)) if s > 0 else 1.0


class HermiteMoments:
    """Per column: ``A[k, l] = u_k' D u_l``, with ``u_k(c) = int_cell(c) phi(x) h_k(x) dx``, ``D = sign(x' - x)``.

    ``h_k`` are the orthonormal Hermite polynomials and the cells are the
    column's latent intervals (cut points ``Phi^-1`` of the cumulative cell
    probabilities). By Mehler's formula ``phi_2(x, y; r) = phi(x) phi(y) sum_k
    r^k h_k(x) h_k(y)``, the cell probabilities of two columns are ``sum_k r^k
    u_k v_k'`` and the population tau-a of the pair is ``sum_{k, l} r^(k + l)
    A[k, l] B[k, l]`` (``A``, ``B`` of the two columns; both antisymmetric).

    Parameters
    ----------
    probabilities : list of ndarray
        Cell probabilities of every column (ordered cells, missing last).
    n_terms : int
        Hermite terms kept.
    """

    def __init__(self, probabilities: list[np.ndarray], n_terms: int = N_TERMS) -> None:
        self.n_terms = n_terms
        self.cell_coefficients = self._coefficients([np.asarray(p, dtype=float) for p in probabilities])
        k, l_ = np.triu_indices(n_terms, 1)
        order = np.argsort(k + l_, kind="stable")
        self._k, self._l = k[order], l_[order]
        self._starts = np.searchsorted((k + l_)[order], np.arange(1, 2 * n_terms - 2))
        self._degrees = np.arange(1, 2 * n_terms - 2)

    @property
    def moments(self) -> np.ndarray:
        """``A`` of every column: (columns, n_terms, n_terms)."""
        u = self.cell_coefficients
        cs = np.cumsum(u, axis=2)
        du = (cs[:, :, -1:] - cs) - (cs - u)  # (D u)[x] = sum_(x' > x) u - sum_(x' < x) u
        return np.einsum("dkx,dlx->dkl", u, du)

    def _coefficients(self, probabilities: list[np.ndarray]) -> np.ndarray:
        """``u`` of every column at once: (columns, n_terms, cells); cells padded with empty ones."""
        m, d = self.n_terms, len(probabilities)
        width = max(len(p) for p in probabilities)
        p = np.zeros((d, width))
        for j, q in enumerate(probabilities):
            total = q.sum()
            p[j, :len(q)] = q / total if total > 0 else 1.0 / len(q)
        t = ndtri(np.clip(np.cumsum(p, axis=1)[:, :-1], 1e-12, 1 - 1e-12))  # (d, width - 1) cut points
        g = np.zeros((m, d, width + 1))  # phi(t) h_k(t) at every cut point; 0 at -inf and +inf
        g[0, :, 1:-1] = np.exp(-t * t / 2.0) / math.sqrt(2.0 * math.pi)
        g[1, :, 1:-1] = t * g[0, :, 1:-1]
        for k in range(1, m - 1):
            g[k + 1, :, 1:-1] = (t * g[k, :, 1:-1] - math.sqrt(k) * g[k - 1, :, 1:-1]) / math.sqrt(k + 1)
        u = np.empty((d, m, width))
        u[:, 0] = np.diff(np.concatenate([np.zeros((d, 1)), ndtr(t), np.ones((d, 1))], axis=1), axis=1)
        # int_cell phi h_k = -[phi h_(k-1)] / sqrt(k) between the cell's cut points
        u[:, 1:] = np.moveaxis(g[:-1, :, :-1] - g[:-1, :, 1:], 0, 1) / np.sqrt(np.arange(1, m))[None, :, None]
        return u

    def polynomials(self, iu: np.ndarray, ju: np.ndarray, batch: int = 512) -> np.ndarray:
        """Coefficients ``c`` (pairs, 2 n_terms - 2): ``tau(r) = sum_m c[:, m - 1] r^m``, m >= 1."""
        flat = self.moments[:, self._k, self._l]  # upper triangle, ordered by degree k + l
        out = np.empty((len(iu), len(self._degrees)))
        for s in range(0, len(iu), batch):
            prod = flat[iu[s:s + batch]] * flat[ju[s:s + batch]]
            out[s:s + batch] = 2.0 * np.add.reduceat(prod, self._starts, axis=1)  # A, B antisymmetric: 2 x half
        return out


def _powers(r: np.ndarray, degree: int) -> np.ndarray:
    """``r^1 .. r^degree`` of every row (one cumulative product)."""
    return np.cumprod(np.broadcast_to(np.asarray(r, dtype=float)[:, None], (len(r), degree)), axis=1)


def horner(c: np.ndarray, r: np.ndarray) -> np.ndarray:
    """``sum_m c[:, m - 1] r^m`` for every row (the series of :class:`HermiteMoments`, no constant term)."""
    return np.einsum("pm,pm->p", c, _powers(r, c.shape[1]))


def horner_slope(c: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Derivative of :func:`horner` in ``r``."""
    powers = np.ones((len(r), c.shape[1]))
    powers[:, 1:] = _powers(r, c.shape[1] - 1)
    return np.einsum("pm,pm->p", c * np.arange(1, c.shape[1] + 1), powers)


def solve_polynomials(c: np.ndarray, target: np.ndarray, start: np.ndarray, iters: int = 40,
                      tol: float = 1e-9) -> np.ndarray:
    """Roots ``r`` of ``tau(r) = target`` for every row, vectorised safeguarded Newton in ``[-R_MAX, R_MAX]``.

    Targets outside the attainable range are clipped to it first (a noisy tau
    can exceed what the margins allow). Rows stop iterating once converged.
    """
    lo, hi = np.full(len(target), -R_MAX), np.full(len(target), R_MAX)
    target = np.clip(target, horner(c, lo), horner(c, hi))
    r = np.clip(np.asarray(start, dtype=float), -R_MAX + 1e-3, R_MAX - 1e-3).copy()
    active = np.arange(len(r))
    for _ in range(iters):
        if not len(active):
            break
        ca, ra = c[active], r[active]
        f = horner(ca, ra) - target[active]
        slope = horner_slope(ca, ra)
        lo[active] = np.where(f < 0, ra, lo[active])
        hi[active] = np.where(f > 0, ra, hi[active])
        with np.errstate(divide="ignore", invalid="ignore"):
            step = ra - f / slope
        ok = np.isfinite(step) & (step > lo[active]) & (step < hi[active])
        new = np.where(ok, step, 0.5 * (lo[active] + hi[active]))
        r[active] = new
        active = active[np.abs(new - ra) >= tol]
    return r


class PairBridge:
    """tau-a <-> latent correlation for a set of column pairs, vectorised over the pairs.

    Pairs of two tie-free columns (chance of a tie at most ``COARSE_TIES``) use
    ``tau_a = (2 / pi) arcsin(r) sqrt((1 - t_i)(1 - t_j))`` (``t``: the ties);
    the others the discretised copula's own tau (:class:`HermiteMoments`), so
    that coarse or unbalanced columns keep their dependence (``sin(pi tau / 2)``
    would shrink it, and a feedback loop of refits would shrink it again every
    generation).

    Parameters
    ----------
    probabilities : list of ndarray
        Cell probabilities of every column (from released counts).
    iu, ju : ndarray of int
        The pairs.
    """

    def __init__(self, probabilities: list[np.ndarray], iu: np.ndarray, ju: np.ndarray) -> None:
        ties = np.array([column_ties(p) for p in probabilities])
        self.iu, self.ju = np.asarray(iu, dtype=np.intp), np.asarray(ju, dtype=np.intp)
        self.tie_factor = np.sqrt(np.clip(1.0 - ties[self.iu], 0.0, None) * np.clip(1.0 - ties[self.ju], 0.0, None))
        self.coarse = np.maximum(ties[self.iu], ties[self.ju]) > COARSE_TIES
        self.poly = np.zeros((int(self.coarse.sum()), 2 * N_TERMS - 3))
        cols = np.unique(np.concatenate([self.iu[self.coarse], self.ju[self.coarse]]))
        if len(cols):
            index = np.full(len(probabilities), -1)
            index[cols] = np.arange(len(cols))
            moments = HermiteMoments([probabilities[j] for j in cols])
            self.poly = moments.polynomials(index[self.iu[self.coarse]], index[self.ju[self.coarse]])

    def subset(self, pairs: np.ndarray) -> PairBridge:
        """The bridge of some of the pairs (indices into this bridge's pairs), sharing its polynomials."""
        out = object.__new__(PairBridge)
        rows = np.cumsum(self.coarse) - 1
        out.iu, out.ju = self.iu[pairs], self.ju[pairs]
        out.tie_factor, out.coarse = self.tie_factor[pairs], self.coarse[pairs]
        out.poly = self.poly[rows[pairs][out.coarse]]
        return out

    def tau(self, r: np.ndarray) -> np.ndarray:
        """Population tau-a of every pair at latent correlations ``r``."""
        r = np.clip(np.asarray(r, dtype=float), -1.0, 1.0)
        out = 2.0 / np.pi * np.arcsin(r) * self.tie_factor
        if self.coarse.any():
            out[self.coarse] = horner(self.poly, r[self.coarse])
        return out

    def slope(self, r: np.ndarray) -> np.ndarray:
        """``d tau / d r`` of every pair at ``r``."""
        r = np.clip(np.asarray(r, dtype=float), -R_MAX, R_MAX)
        out = 2.0 / np.pi / np.sqrt(1.0 - r * r) * self.tie_factor
        if self.coarse.any():
            out[self.coarse] = horner_slope(self.poly, r[self.coarse])
        return out

    def correlation(self, tau_a: np.ndarray) -> np.ndarray:
        """Latent correlation of every pair whose population tau-a is ``tau_a``."""
        tau_a = np.asarray(tau_a, dtype=float)
        f = self.tie_factor
        tau_b = np.where(f > 1e-9, tau_a / np.where(f > 1e-9, f, 1.0), 0.0)
        r = np.sin(np.pi / 2.0 * np.clip(tau_b, -1.0, 1.0))
        if self.coarse.any():
            r[self.coarse] = solve_polynomials(self.poly, tau_a[self.coarse], r[self.coarse])
        return np.clip(r, -R_MAX, R_MAX)


# ---------------------------------------------------------------------------------------- matrices
def soft_completion(r: np.ndarray, iu: np.ndarray, ju: np.ndarray, d: int, mu: np.ndarray | float,
                    iters: int = 60, tol: float = 1e-10, theta0: np.ndarray | None = None) -> np.ndarray:
    """Correlation matrix with the measured pairs ``(iu, ju)`` close to ``r`` and maximum entropy elsewhere.

    Maximises ``log det W - sum_e (W_e - r_e)^2 / (4 mu_e)`` over correlation
    matrices ``W``: with ``mu = 0`` the max-determinant completion (a Gaussian
    graphical model, zeros in the precision matrix off the measured pairs),
    with ``mu_e > 0`` noisy measurements are trusted in proportion to their
    precision and an inconsistent set still has a solution. Solved in the dual,
    over a precision matrix supported on the measured pairs and the diagonal
    (``-log det T + tr(S T) + sum_e mu_e T_e^2``, convex), by Newton steps with
    backtracking that keep ``T`` positive definite. ``theta0``: a positive
    definite starting precision (e.g. the previous solution when pairs are
    added); its entries off the measured pairs are ignored.
    """
    return soft_completion_precision(r, iu, ju, d, mu, iters, tol, theta0)[0]


def soft_completion_precision(r: np.ndarray, iu: np.ndarray, ju: np.ndarray, d: int, mu: np.ndarray | float,
                              iters: int = 60, tol: float = 1e-10,
                              theta0: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`soft_completion` and the precision matrix it ends at (to warm-start the next one)."""
    r = np.asarray(r, dtype=float)
    n_e = len(r)
    mu = np.broadcast_to(np.asarray(mu, dtype=float), (n_e,))
    rows = np.concatenate([np.arange(d), iu]).astype(np.intp)
    cols = np.concatenate([np.arange(d), ju]).astype(np.intp)
    scale = np.concatenate([np.full(d, math.sqrt(0.5)), np.full(n_e, math.sqrt(2.0))])
    x = np.concatenate([np.ones(d), np.zeros(n_e)])
    edge = np.arange(d, d + n_e)
    if theta0 is not None:
        start = np.concatenate([np.diag(theta0), theta0[iu, ju]])
        if np.isfinite(objective_of(start, rows, cols, d, r, mu)[0]):
            x = start

    def objective(v: np.ndarray) -> tuple[float, np.ndarray | None]:
        return objective_of(v, rows, cols, d, r, mu)

    f, theta = objective(x)
    for _ in range(iters):
        w = np.linalg.inv(theta)
        grad = np.concatenate([1.0 - np.diag(w), 2.0 * (r - w[iu, ju] + mu * x[d:])])
        hess = (w[np.ix_(rows, cols)] * w[np.ix_(cols, rows)] + w[np.ix_(rows, rows)] * w[np.ix_(cols, cols)])
        hess *= np.outer(scale, scale)
        hess[edge, edge] += 2.0 * mu
        step = -np.linalg.solve(hess, grad)
        decrement = -grad @ step
        if decrement < 2 * tol:
            break
        t_step = 1.0
        while t_step > 1e-10:
            f_new, theta_new = objective(x + t_step * step)
            if f_new <= f - 0.25 * t_step * decrement:
                break
            t_step /= 2.0
        else:
            break
        x, f, theta = x + t_step * step, f_new, theta_new
    w = np.linalg.inv(theta)
    s = np.sqrt(np.diag(w))
    w = w / np.outer(s, s)
    return nearest_correlation(w), theta


def objective_of(v: np.ndarray, rows: np.ndarray, cols: np.ndarray, d: int, r: np.ndarray,
                 mu: np.ndarray) -> tuple[float, np.ndarray | None]:
    """The dual objective of :func:`soft_completion` at precision parameters ``v`` (inf when not PD)."""
    t = np.zeros((d, d))
    t[rows, cols] = v
    t[cols, rows] = v
    try:
        chol = np.linalg.cholesky(t)
    except np.linalg.LinAlgError:
        return math.inf, None
    return float(-2.0 * np.log(np.diag(chol)).sum() + v[:d].sum() + 2.0 * r @ v[d:] + mu @ v[d:] ** 2), t


def nearest_correlation(matrix: np.ndarray, floor: float = EIG_FLOOR) -> np.ndarray:
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
