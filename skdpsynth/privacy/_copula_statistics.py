"""NPGC's sufficient statistics, accumulated chunk by chunk, and the handle that answers them only under DP.

Everything NPGC measures is a function of three additive statistics of the
cohort: the number of people ``n``, the cell counts of every column (the
marginals) and the contingency table of every pair of columns on coarser
*dependence cells* (Kendall's tau of a pair is computed exactly from its
table). They are summed over row chunks, over the chunks of an iterable, or
over the partitions of a Dask DataFrame (:mod:`skdpsynth._chunks`), so memory
is bounded by the chunk and the tables, whatever the number of rows.

NPGC's fit receives them behind :class:`PrivateCopulaStatistics`, whose queries (the columns' histograms, every
pair's Kendall's tau numerator, clipped normal-score sums, two-way tables) return charged noisy answers; each
states its sensitivity under add/remove one person (one row) from its definition.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from skdpsynth.privacy._accounting import BudgetAccountant
from skdpsynth.privacy._answers import PrivateHandle, PrivateVector
from skdpsynth.privacy._clipping import ClipTally
from skdpsynth.privacy._noise import NoiseSource

if TYPE_CHECKING:  # the public cell layout of NPGC's columns (read only through its attributes here)
    from skdpsynth.synthesizers._npgc_cells import NPGCColumnCells

__all__ = ["CohortStatistics", "PairCounter", "PairLayout", "PrivateCopulaStatistics", "StatisticsBuilder",
           "column_groups", "concordance", "concordances", "dependence_map", "frame_statistics", "padded_concordances",
           "pair_numerators", "public_numerator", "DEPENDENCE_CELLS", "CHUNK_CELLS"]

#: most dependence cells of one column (value cells are merged in runs of consecutive cells beyond this)
DEPENDENCE_CELLS = 36
#: rows x columns encoded at a time (bounds the temporaries of one chunk)
CHUNK_CELLS = 1 << 21
#: rows of one pass of the pair tables (their keys stay in the processor's cache)
PAIR_ROWS = 1 << 13
#: most joint cells of a group of columns whose pair tables are counted together (:class:`PairCounter`).
#: Counting the pair tables of 1e6 Adult rows: 0.40 s with 64, 0.47 s with 256
GROUP_CELLS = 64
#: fewer rows are counted pair by pair: summing each pair's table out of its groups' tables costs a few
#: milliseconds whatever the rows (UCI dropout, 3,096 rows x 37 columns: 14 ms pair by pair, 21 ms grouped;
#: at 9,288 rows 37 against 28 ms)
GROUP_MIN_ROWS = 1 << 13
#: rows of one pass of the grouped pair tables (about as many as the cells of one group pair's table)
GROUP_ROWS = 1 << 16


def dependence_map(cells: NPGCColumnCells, cap: int = DEPENDENCE_CELLS) -> np.ndarray:
    """Dependence cell of each of the column's cells (public: laid out from the schema only).

    Columns with at most ``cap`` cells keep them; wider columns (long integer
    ranges, many categories, many bins) merge runs of consecutive value cells
    into ``cap - 1`` groups (``cap`` when not nullable); the missing cell stays
    last. Tau on the merged cells is still the tau of the same latent copula
    (the bridge accounts for the extra ties).
    """
    n = cells.n_cells
    if n <= cap:
        return np.arange(n)
    values = cells.n_value_cells
    groups = cap - int(cells.spec.nullable)
    out = (np.arange(values) * groups) // values
    return np.concatenate([out, [groups]]) if cells.spec.nullable else out


class PairLayout:
    """Where each pair's contingency table lives in one flat int64 vector (public: from the cell counts only).

    Column ``i``'s tables against every later column form one block of shape
    ``(d - 1 - i, c_i, K_i)``: ``c_i`` rows (column ``i``'s dependence cells),
    ``K_i = max_(j > i) c_j`` columns (a narrower table is padded with empty
    cells). Pairs run in ``np.triu_indices`` order. Statistics of chunks add up
    as flat vectors.

    Parameters
    ----------
    sizes : sequence of int
        Dependence cells of every column.
    """

    def __init__(self, sizes) -> None:
        self.sizes = np.asarray(sizes, dtype=np.int64)
        d = len(self.sizes)
        self.shapes = [(d - 1 - i, int(self.sizes[i]), int(self.sizes[i + 1:].max())) for i in range(d - 1)]
        lengths = [a * b * c for a, b, c in self.shapes]
        self.starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        self.size = int(self.starts[-1])

    def blocks(self, flat: np.ndarray):
        """``(i, view)`` for every column ``i`` with later columns; ``view`` is (pairs, c_i, K_i)."""
        for i, shape in enumerate(self.shapes):
            yield i, flat[self.starts[i]:self.starts[i + 1]].reshape(shape)

    def table(self, flat: np.ndarray, i: int, j: int) -> np.ndarray:
        """The (c_i, c_j) table of pair ``i < j``."""
        block = flat[self.starts[i]:self.starts[i + 1]].reshape(self.shapes[i])
        return block[j - i - 1, :, :self.sizes[j]]

    def add(self, flat: np.ndarray, dep: np.ndarray) -> None:
        """Add the pair tables of one chunk of dependence-cell codes (d, rows) to ``flat``."""
        for i, (width, rows, k) in enumerate(self.shapes):
            # one bincount per column against every later column: key = (pair, cell_i, cell_j)
            keys = dep[i + 1:] + (np.arange(width) * (rows * k))[:, None]
            keys += dep[i] * k
            flat[self.starts[i]:self.starts[i + 1]] += np.bincount(keys.ravel(), minlength=width * rows * k)


def column_groups(sizes, cap: int) -> list[list[int]]:
    """Columns packed into groups of at most ``cap`` joint cells (first fit by decreasing size; public)."""
    groups: list[list[int]] = []
    joint: list[int] = []
    for j in sorted(range(len(sizes)), key=lambda j: -int(sizes[j])):
        fit = next((g for g, size in enumerate(joint) if size * sizes[j] <= cap), None)
        if fit is None:
            groups.append([j])
            joint.append(int(sizes[j]))
        else:
            groups[fit].append(j)
            joint[fit] *= int(sizes[j])
    return groups


class PairCounter:
    """Counts the pair tables of chunks of dependence-cell codes into a :class:`PairLayout` vector.

    Small columns are packed into groups of at most ``cap`` joint cells
    (:func:`column_groups`): one bincount of two groups' joint codes counts the
    tables of every pair across them, and a group's own histogram those of the
    pairs inside it, so there are several times fewer passes over the rows than
    pairs. Each pair's table is then a sum over the other columns of its groups
    (exact). Without any group of two columns, the pairs are counted column by
    column (:meth:`PairLayout.add`).

    Parameters
    ----------
    layout : PairLayout
        Where the tables go.
    cap : int
        Most joint cells of a group; below the widest column nothing is grouped.
    """

    def __init__(self, layout: PairLayout, cap: int) -> None:
        self.layout = layout
        self.flat = np.zeros(layout.size, dtype=np.int64)
        groups = column_groups(layout.sizes, cap)
        self.groups = groups if len(groups) > 1 and len(groups) < len(layout.sizes) else None
        if self.groups is None:
            return
        self.dims = [[int(layout.sizes[j]) for j in g] for g in self.groups]
        self.joint = [int(np.prod(dims)) for dims in self.dims]
        g = len(self.groups)
        self.joint_tables = {(a, b): np.zeros(self.joint[a] * self.joint[b], dtype=np.int64)
                             for a in range(g) for b in range(a + 1, g)}

    @staticmethod
    def cells(sizes, cap: int) -> int:
        """Cells of the grouped tables for columns of ``sizes`` dependence cells (memory, before counting)."""
        joint = [int(np.prod([sizes[j] for j in g])) for g in column_groups(sizes, cap)]
        return sum(a * b for i, a in enumerate(joint) for b in joint[i + 1:])

    def add(self, dep: np.ndarray | list[np.ndarray]) -> None:
        """Add the pair tables of one chunk of dependence-cell codes: an array (d, rows), or its d rows."""
        if self.groups is None:
            dep = np.asarray(dep)
            for start in range(0, dep.shape[1], PAIR_ROWS):  # keys of a few thousand rows stay in cache
                self.layout.add(self.flat, dep[:, start:start + PAIR_ROWS])
            return
        for start in range(0, len(dep[0]), GROUP_ROWS):
            block = [row[start:start + GROUP_ROWS] for row in dep]
            codes = [self._joint_codes(block, g) for g in self.groups]
            key = np.empty(len(block[0]), dtype=np.int64)
            for (a, b), table in self.joint_tables.items():
                np.multiply(codes[a], self.joint[b], out=key)
                key += codes[b]
                table += np.bincount(key, minlength=len(table))

    def _joint_codes(self, block: list[np.ndarray], group: list[int]) -> np.ndarray:
        if len(group) == 1:
            return block[group[0]]
        codes = block[group[0]] * self.layout.sizes[group[1]]
        codes += block[group[1]]
        for j in group[2:]:
            codes *= self.layout.sizes[j]
            codes += block[j]
        return codes

    def result(self) -> np.ndarray:
        """The pair tables so far, laid out by :class:`PairLayout`."""
        if self.groups is None:
            return self.flat
        out = self.flat.copy()
        done = set()
        for (a, b), table in self.joint_tables.items():
            joint = table.reshape(self.dims[a] + self.dims[b])
            ga, gb = self.groups[a], self.groups[b]
            axes = {j: k for k, j in enumerate(ga + gb)}
            pairs = [(i, j) for i in ga for j in gb]
            for g, sub in ((a, ga), (b, gb)):  # the pairs inside a group, from its first table
                if g not in done and len(sub) > 1:
                    pairs += [(i, j) for k, i in enumerate(sub) for j in sub[k + 1:]]
                    done.add(g)
            for i, j in pairs:
                other = tuple(k for c, k in axes.items() if c not in (i, j))
                t = joint.sum(axis=other)  # axes in the order of ga + gb
                if axes[i] > axes[j]:
                    t = t.T
                lo, hi = (i, j) if i < j else (j, i)
                self.layout.table(out, lo, hi)[...] += t if i < j else t.T
        return out


@dataclass
class CohortStatistics:
    """Exact statistics of one cohort (private: the estimator only adds noise to them).

    Attributes
    ----------
    n : int
        Number of rows (people).
    counts : ndarray of int64
        Cell counts of all columns, concatenated in column order.
    tables : ndarray of int64
        Contingency table of every column pair on the dependence cells, laid out by :class:`PairLayout`.
    ecdf : list or None
        Non-private mode only: per numeric / datetime column ``(values, counts, n_missing)``.
    clipped : ClipTally
        The values the schema clipped (exact; the estimator releases them only as a noisy count).
    """

    n: int
    counts: np.ndarray
    tables: np.ndarray
    ecdf: list | None = None
    clipped: ClipTally = field(default_factory=ClipTally)

    def merge(self, other: CohortStatistics) -> CohortStatistics:
        """The statistics of both chunks (sums; exact empirical CDFs merged)."""
        ecdf = None
        if self.ecdf is not None and other.ecdf is not None:
            ecdf = [_merge_ecdf(a, b) for a, b in zip(self.ecdf, other.ecdf)]
        return CohortStatistics(self.n + other.n, self.counts + other.counts, self.tables + other.tables, ecdf,
                                self.clipped.merge(other.clipped))


def _merge_ecdf(a, b):
    if a is None or b is None:
        return a if b is None else b
    values, inverse = np.unique(np.concatenate([a[0], b[0]]), return_inverse=True)
    counts = np.bincount(inverse, weights=np.concatenate([a[1], b[1]]))
    return values, counts, a[2] + b[2]


class StatisticsBuilder:
    """Accumulates :class:`CohortStatistics` from schema-normalised chunks.

    Parameters
    ----------
    cells : tuple of NPGCColumnCells
        The public cells of every column.
    exact_values : bool
        Also keep the exact empirical CDF of numeric / datetime columns (non-private mode).
    rows : int or None
        About how many rows will be added (how the pair tables are best counted; None: few).
    """

    def __init__(self, cells: tuple[NPGCColumnCells, ...], exact_values: bool = False,
                 rows: int | None = None) -> None:
        self.cells = cells
        self.exact_values = exact_values
        sizes = np.array([g.n_cells for g in cells], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(sizes)])
        self.maps = [dependence_map(g) for g in cells]
        self.layout = PairLayout([int(m.max()) + 1 for m in self.maps])
        d = len(cells)
        self.n = 0
        self.counts = np.zeros(int(self.offsets[-1]), dtype=np.int64)
        self.pairs = PairCounter(self.layout, _group_cap(self.layout, rows or 0))
        self.ecdf = [None] * d if exact_values else None
        self.clipped = ClipTally()

    def add(self, columns: pd.DataFrame | dict, n_rows: int) -> None:
        """Fold in one schema-normalised chunk: a DataFrame, or ``TableSchema._normalised_columns`` output
        (categorical columns as codes into their categories)."""
        if n_rows == 0:
            return
        codes = np.empty((len(self.cells), n_rows), dtype=np.int64)  # one contiguous row per column
        for j, g in enumerate(self.cells):
            col = columns[g.spec.name]
            if isinstance(col, np.ndarray):  # category codes, -1 missing
                codes[j] = col
                if g.missing_cell is not None:
                    row = codes[j]
                    row[row < 0] = g.missing_cell
                continue
            codes[j] = g.encode(col)
            if self.exact_values and g.spec.kind not in ("categorical", "boolean"):
                self.ecdf[j] = _merge_ecdf(self.ecdf[j], _column_ecdf(col, g.spec.kind))
        self.add_codes(codes)

    def add_codes(self, codes: np.ndarray) -> None:
        """Fold in the cell codes (d, rows) of one chunk."""
        self.n += codes.shape[1]
        for j, (lo, hi) in enumerate(zip(self.offsets[:-1], self.offsets[1:])):  # no offset copy of the codes
            self.counts[lo:hi] += np.bincount(codes[j], minlength=hi - lo)
        if len(codes) > 1:
            merged = [j for j, m in enumerate(self.maps) if len(m) > m[-1] + 1]  # the other maps are identities
            dep = list(codes) if merged else codes  # rows: only the merged ones are new arrays
            for j in merged:
                dep[j] = self.maps[j][codes[j]]
            self.pairs.add(dep)

    def result(self) -> CohortStatistics:
        """The statistics so far."""
        return CohortStatistics(self.n, self.counts, self.pairs.result(), self.ecdf, self.clipped)


def _group_cap(layout: PairLayout, rows: int) -> int:
    """Most joint cells of a group of columns (:class:`PairCounter`) for about ``rows`` rows.

    A group pair's table of ``cap^2`` cells pays for itself when there are
    several times as many rows; its tables together take at most the memory
    of one chunk or of the pair tables themselves.
    """
    if rows < GROUP_MIN_ROWS:
        return 1
    cap = GROUP_CELLS
    while cap * cap * 4 > rows:
        cap //= 2
    while cap > 1 and PairCounter.cells(layout.sizes, cap) > max(CHUNK_CELLS, layout.size):
        cap //= 2
    return cap


def _column_ecdf(col: pd.Series, kind: str):
    """Distinct values, their counts and the number missing (non-private mode)."""
    missing = int(col.isna().sum())
    vals = col.dropna().to_numpy().astype("datetime64[ns]" if kind == "datetime" else float)
    values, counts = np.unique(vals, return_counts=True)
    return values, counts.astype(float), float(missing)


def chunk_rows(n_columns: int) -> int:
    """Rows per chunk for a table of ``n_columns`` columns."""
    return max(1024, CHUNK_CELLS // max(n_columns, 1))


def frame_statistics(X: pd.DataFrame, cells: tuple[NPGCColumnCells, ...], *, schema=None,
                     exact_values: bool = False) -> CohortStatistics:
    """Statistics of one table, chunk by chunk.

    ``X`` is validated against ``schema`` chunk by chunk when given (raw
    input), otherwise it must already be schema-normalised. The values it
    clips are tallied (:attr:`CohortStatistics.clipped`), never shown.
    """
    builder = StatisticsBuilder(cells, exact_values, rows=len(X))
    rows = chunk_rows(X.shape[1])
    for start in range(0, max(len(X), 1), rows):
        chunk = X if len(X) <= rows else X.iloc[start:start + rows]
        columns = chunk
        if schema is not None:  # checked and normalised column by column; no normalised copy of the chunk
            masks: dict = {}
            columns = schema._normalised_columns(chunk, category_codes=True, clipped=masks)
            builder.clipped.add(masks)
        builder.add(columns, len(chunk))
    return builder.result()


# ------------------------------------------------------------------------------------------ exact pair counts
def concordances(tables: np.ndarray) -> np.ndarray:
    """``S`` (concordant minus discordant pairs) of every table of a stack (P, nx, ny), exactly (int64).

    ``ge[i, l]`` counts ``x >= i, y >= l`` and ``le[i, l]`` counts ``x >= i, y <= l`` (2-D cumulative sums),
    so the cost is O(cells) per table; tied pairs (same row or same column) count 0.
    """
    t = np.asarray(tables, dtype=np.int64)
    if t.shape[-2] < 2 or t.shape[-1] < 2:
        return np.zeros(t.shape[:-2], dtype=np.int64)
    ge = t[..., ::-1, ::-1].cumsum(-2).cumsum(-1)[..., ::-1, ::-1]
    le = t[..., ::-1, :].cumsum(-2)[..., ::-1, :].cumsum(-1)
    return ((t[..., :-1, :-1] * ge[..., 1:, 1:]).sum((-2, -1))
            - (t[..., :-1, 1:] * le[..., 1:, :-1]).sum((-2, -1)))


def concordance(table: np.ndarray) -> int:
    """``S`` of one contingency table (rows and columns ordered), exactly."""
    return int(concordances(np.asarray(table)[None])[0])


def padded_concordances(tables: np.ndarray, layout: PairLayout, pad: int = 0) -> np.ndarray:
    """``S`` of every pair's table with ``pad`` dummy people added in cell (0, 0), ``np.triu_indices`` order."""
    out = []
    for _, block in layout.blocks(tables):
        if pad > 0:
            block = block.copy()
            block[:, 0, 0] += pad
        out.append(concordances(block))
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def public_numerator(s: np.ndarray, m: int, a: int) -> np.ndarray:
    """``S`` re-expressed on the public number of pairs ``C(a, 2)``: ``floor(S C(a, 2) / C(m, 2) + 1/2)``.

    Computed in exact integer arithmetic. It is ``S`` itself when ``m = a``.
    Rounding half up is monotone and commutes with integer shifts, so an
    integer bound on how far the unrounded value moves also bounds the rounded
    one (:func:`noisy_kendall_tau`).
    """
    ca, cm = math.comb(a, 2), math.comb(m, 2)
    return np.array([(2 * int(v) * ca + cm) // (2 * cm) for v in s], dtype=np.int64)


def pair_numerators(tables: np.ndarray, layout: PairLayout, n: int, a: int) -> np.ndarray:
    """The released query before noise: every pair's padded ``S`` on ``C(a, 2)`` pairs (private, exact)."""
    m = max(n, a)
    return public_numerator(padded_concordances(tables, layout, m - n), m, a)




# ------------------------------------------------------------------------------------------ the handle
class PrivateCopulaStatistics(PrivateHandle):
    """One cohort's :class:`CohortStatistics` behind DP queries: what NPGC's fit receives instead of the rows.

    Neighbouring relation: add or remove one person (one row of the cohort). Every query returns a
    :class:`~skdpsynth.privacy._answers.PrivateVector` whose per-group bounds are derived here from the
    statistic's definition; measuring or selecting on it charges the accountant before noise is drawn. Only a
    non-private fit (``epsilon=None``) gets the statistics themselves (:meth:`nonprivate`), recorded as such.

    Parameters
    ----------
    stats : CohortStatistics
        The exact statistics (private).
    accountant : BudgetAccountant
        This cohort's budget.
    noise : NoiseSource
        The only source of noise.
    """

    _holds = "statistics"

    def __init__(self, stats: CohortStatistics, *, accountant: BudgetAccountant, noise: NoiseSource) -> None:
        super().__init__(accountant=accountant, noise=noise)
        self.__stats = stats

    @classmethod
    def from_rows(cls, X: pd.DataFrame, cells, *, accountant: BudgetAccountant,
                  noise: NoiseSource) -> PrivateCopulaStatistics:
        """The handle of a schema-normalised table (its statistics computed here, chunk by chunk)."""
        return cls(frame_statistics(X, cells, exact_values=not accountant.private), accountant=accountant, noise=noise)

    def nonprivate(self, why: str) -> CohortStatistics:
        """The exact statistics, for ``epsilon=None`` only; recorded as a non-private use."""
        self._open(why)
        return self.__stats

    # -- queries
    def histograms(self, offsets: np.ndarray) -> PrivateVector:
        """Every column's cell counts, concatenated (``offsets`` delimit the columns).

        One person is in one cell of each column's histogram: one group per column, bound 1 (L1 sensitivity
        ``d``, L2 ``sqrt(d)``).
        """
        counts = self.__stats.counts
        groups = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
        return self._vector(counts, groups, np.ones(len(offsets) - 1))

    def kendall_numerators(self, layout: PairLayout, a: int) -> PrivateVector:
        """Every pair's Kendall's tau numerator on the public number of pairs ``C(a, 2)``.

        Neighbouring relation: add or remove one person (one row).

        *Query.* The data are padded with ``max(0, a - n)`` dummy people in cell (0, 0), so the query sees
        ``m = max(n, a)`` people, where ``a >= 2`` is public (derived from already released counts). Per pair,
        ``tau = S / C(m, 2)`` and the integer is ``q = round(tau C(a, 2))`` (:func:`public_numerator`): ``S``
        itself whenever ``n <= a``.

        *Sensitivity of q: 2 (a - 1) per pair.* Let ``D' = D + one person``, ``|D| = n``. (i) ``n < a``: both
        are padded to exactly ``a`` people and ``D'`` replaces one dummy by the person. That person's ``a - 1``
        pair terms (each -1, 0 or +1) change by at most 2 each, the others not at all, so ``|dS| <= 2 (a - 1)``,
        which is tight. Since ``m = a``, ``q = S``. (ii) ``n >= a``: no padding, ``m = n -> n + 1``. With
        ``|S| <= C(n, 2)`` and the new person's terms ``s``, ``|s| <= n``, ``tau - tau' = 4 S / (n (n - 1)
        (n + 1)) - 2 s / (n (n + 1))``, each part at most ``2 / (n + 1)``, so ``|dtau| <= 4 / (n + 1) < 4 / a``
        and ``|d(tau C(a, 2))| < 2 (a - 1)``. In both cases the unrounded value moves by at most the integer
        ``K = 2 (a - 1)``, hence so does ``q`` (rounding half up is monotone and commutes with integer shifts).
        The raw ``S`` would not do: it moves by up to ``n`` when ``n >= a``, a private and unbounded
        sensitivity. Coarsening a column's cells (public, :func:`dependence_map`) changes none of this.

        One person moves every pair: one group per pair, bound ``2 (a - 1)`` (L2 ``sqrt(P) 2 (a - 1)``,
        L1 ``P 2 (a - 1)``). There is no failure probability; padding only biases tau towards 0 when ``n < a``.
        """
        a = int(a)
        if a < 2:
            raise ValueError("kendall_numerators needs a public size a >= 2.")
        q = pair_numerators(self.__stats.tables, layout, self.__stats.n, a)
        return self._vector(q, np.arange(q.size), np.full(q.size, 2.0 * (a - 1)))

    def score_sums(self, scores: np.ndarray, bound: np.ndarray, layout: PairLayout) -> PrivateVector:
        """Every pair's sum over people of the product of two public clipped normal scores.

        ``T_ij = sum_people s_i(x_i) s_j(x_j)`` with public scores ``s`` (from released marginals; row ``i`` of
        ``scores`` holds column ``i``'s score per dependence cell, ``bound[i] >= max |s_i|``). Adding or removing
        one person changes ``T_ij`` by that person's ``s_i s_j``: one group per pair, bound
        ``bound[i] bound[j]``. No row count enters the query.
        """
        tables = self.__stats.tables
        out = []
        for i, block in layout.blocks(tables):
            rows, k = block.shape[1:]
            left = scores[i, :rows] @ block  # (pairs, K_i): summed over column i's cells
            out.append(np.einsum("pb,pb->p", left, scores[i + 1:, :k]))
        sums = np.concatenate(out) if out else np.zeros(0)
        iu, ju = np.triu_indices(len(layout.sizes), 1)
        return self._vector(sums, np.arange(sums.size), bound[iu] * bound[ju])

    def pair_tables(self, layout: PairLayout, edges: list[tuple[int, int]]) -> tuple[PrivateVector, list]:
        """The two-way tables of ``edges`` (each ``(row column, column column)``), concatenated flat.

        One person is in one cell of each table: one group per table, bound 1 (L1 ``k``, L2 ``sqrt(k)`` for
        ``k`` tables). Returns the vector and, per table, its coordinates' index and shape (public).
        """
        flats, where, start = [], [], 0
        for r, c in edges:
            lo, hi = min(r, c), max(r, c)
            t = layout.table(self.__stats.tables, lo, hi)
            t = t if r == lo else t.T
            flats.append(t.ravel())
            where.append((np.arange(start, start + t.size), t.shape))
            start += t.size
        groups = np.concatenate([np.full(len(idx), g) for g, (idx, _) in enumerate(where)]) if where else []
        values = np.concatenate(flats) if flats else np.zeros(0, dtype=np.int64)
        return self._vector(values, np.asarray(groups, dtype=np.int64), np.ones(len(edges))), where
