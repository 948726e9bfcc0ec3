"""NPGC's sampler: a Gaussian copula over the (noisy) discretised marginals (post-processing only)."""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr, ndtri

from skdpsynth.synthesizers._npgc_bridge import cholesky, nearest_correlation

__all__ = ["GaussianCopula"]

#: rows drawn at a time by i.i.d. sampling
_CHUNK = 1 << 16


def _ranks(z: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Rank-stratified uniforms: the i-th smallest of ``z`` gets a uniform in ``[i / n, (i + 1) / n)``."""
    n = len(z)
    u = np.empty(n)
    u[np.argsort(z)] = (np.arange(n) + rng.random(n)) / n
    return u


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
    (repaired to the nearest correlation matrix), each column's cell
    ``probabilities`` and, optionally, ``children``: ``(parent, child,
    cumulative P(child | parent))`` in sampling order. A child's cell is then
    drawn from its conditional table given the parent's cell, at the
    uniform of the part of its latent value the parent's does not explain,
    ``z_c - r z_p`` (independent of ``z_p``, still dependent on the other
    columns): the pair's two-way table is the table's, the rest the copula's.
    """

    def __init__(self, correlation: np.ndarray, probabilities: list[np.ndarray],
                 children: list[tuple[int, int, np.ndarray]] = ()) -> None:
        self.children = list(children)
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
        column's frequencies match its marginal to within two rows (a cell's two end strata) while the
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
        keep = {j for edge in self.children for j in edge[:2]}
        if stratified:
            gauss = rng.standard_normal((d, n))
            latent = {}
            for j in range(d):
                zj = self.chol[j, : j + 1] @ gauss[: j + 1]
                if j in keep:
                    latent[j] = zj
                u = _ranks(zj, rng)
                codes[j] = np.minimum(np.searchsorted(self.cum[j], u, side="right"), self.last[j])
                if j in within:
                    within[j] = self._within(j, codes[j], u)
            self._children(codes, latent, lambda e: _ranks(e, rng))
            return codes, within
        for start in range(0, n, _CHUNK):
            stop = min(start + _CHUNK, n)
            zt = self.chol @ rng.standard_normal((stop - start, d)).T  # (d, chunk): one contiguous row per column
            for j in range(d):
                c = np.minimum(np.searchsorted(self.zcut[j], zt[j], side="right"), self.last[j])
                codes[j, start:stop] = c
                if j in within:
                    within[j][start:stop] = self._within(j, c, ndtr(zt[j]))
            block = codes[:, start:stop]
            self._children(block, {j: zt[j] for j in keep}, None)
            codes[:, start:stop] = block
        return codes, within

    def _children(self, codes: np.ndarray, latent: dict, stratify) -> None:
        """Redraw every child's cell from its conditional table given its parent's cell (in place)."""
        for parent, child, cum in self.children:
            r = float(self.correlation[parent, child])
            resid = latent[child] - r * latent[parent]
            u = None if stratify is not None else ndtr(resid / np.sqrt(max(1.0 - r * r, 1e-12)))
            out = np.empty(codes.shape[1], dtype=np.int64)
            for cell in range(cum.shape[0]):
                rows = np.flatnonzero(codes[parent] == cell)
                if rows.size:
                    # stratified within the parent's cell: the child's counts there follow the table to within
                    # two rows, so refitting on the sample does not accumulate multinomial noise in the table
                    v = stratify(resid[rows]) if stratify is not None else u[rows]
                    out[rows] = np.minimum(np.searchsorted(cum[cell], v, side="right"), cum.shape[1] - 1)
            codes[child] = out
