"""The private table as a synthesizer sees it: a handle whose only outputs are DP answers.

A synthesizer's fit hook receives a :class:`PrivateTable`, never the rows. The handle holds the cohort's rows, the
public schema, the accountant and the noise source; each query derives its sensitivity from its own definition
under the neighbouring relation (add or remove all records of one person, one row per person after validation:
contribution bound 1), charges the accountant, and only then draws noise. What a synthesizer can learn about the
rows is therefore what the answers say, and what it spends is what the queries charged.

The model is OpenDP's transformation -> measurement chain (a row-wise map keeps the contribution bound; a count per
cell then has L1 = L2 sensitivity 1) and Tumult Analytics' Session (queries charge one accountant).

Queries
-------
``histogram(encode, n_cells)``
    People per cell of a public row-wise encoding (cells < 0 are dropped): each person is in at most one cell,
    so L1 = L2 sensitivity 1. Discrete Gaussian at ``rho`` (zCDP) or geometric at ``epsilon`` (pure).
``marginal(grid, clique)``
    ``histogram`` of a clique of a :class:`~skdpsynth.PublicGrid`, optionally through public cell maps
    (compression).
``select_marginal(grid, cliques, estimates)``
    Exponential mechanism over ``w_r (||M_r(D) - estimate_r||_1 - penalty_r)``: adding one person changes one cell
    of each marginal by 1, so each utility by at most ``w_r``; sensitivity ``max_r w_r``.
``count()``
    The number of people (sensitivity 1).

With ``epsilon=None`` (a non-private fit) every query returns its exact answer and records a non-private
declaration, so ``privacy_spent_`` says the release is not private. ``nonprivate_rows`` gives the rows themselves
only then.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np
import pandas as pd

from skdpsynth.privacy._accounting import BudgetAccountant
from skdpsynth.privacy._answers import PrivateHandle, PrivateVector
from skdpsynth.privacy._noise import NoiseSource
from skdpsynth.privacy._pate import TeacherPartitions

__all__ = ["PrivateTable"]


class PrivateTable(PrivateHandle):
    """One cohort of private rows, answered only through DP queries.

    Parameters
    ----------
    rows : pandas.DataFrame
        The schema-normalised rows, one per person. Kept on the handle only; never returned while private.
    schema : TableSchema
        The public domain.
    accountant : BudgetAccountant
        This cohort's budget; every query charges it before drawing.
    noise : NoiseSource
        The only source of privacy noise.

    Notes
    -----
    The handle is not picklable and has no length: the number of people is private.
    """

    _holds = "rows"

    def __init__(self, rows: pd.DataFrame, schema, *, accountant: BudgetAccountant, noise: NoiseSource) -> None:
        self.__rows = rows
        self.__codes: dict[int, tuple[object, np.ndarray]] = {}
        self.__exact: dict[tuple, tuple[np.ndarray, tuple[int, ...]]] = {}
        self.__columns: dict[tuple, tuple[np.ndarray, int]] = {}
        self.__stores: dict[tuple, dict] = {}  # per grid and maps: the selections' exact counts (one flat array)
        self.schema = schema
        self.columns = tuple(str(c) for c in rows.columns)
        super().__init__(accountant=accountant, noise=noise)

    def __repr__(self) -> str:
        return f"PrivateTable(columns={list(self.columns)!r}, private={self.private})"

    # -- queries ------------------------------------------------------------------------
    def histogram(self, encode: Callable[[pd.DataFrame], np.ndarray], n_cells: int, *, rho: float | None = None,
                  epsilon: float | None = None, target: str) -> np.ndarray:
        """Noisy number of people in each cell of a public row-wise encoding.

        Parameters
        ----------
        encode : callable
            Public row-wise map from the rows to integer cells in ``[0, n_cells)`` (negative: in no cell). Being
            row-wise, it keeps the contribution bound of one row per person.
        n_cells : int
            Number of cells.
        rho, epsilon : float, optional
            Cost: discrete Gaussian at ``rho`` (zCDP) or geometric at ``epsilon`` (pure). Exactly one when private.
        target : str
            What is measured, for the budget log.

        Returns
        -------
        numpy.ndarray of int64, shape (n_cells,)
            Sensitivity: adding or removing one person changes one cell by 1 (L1 = L2 = 1).
        """
        codes = np.asarray(encode(self.__rows))
        if codes.shape != (len(self.__rows),):
            raise ValueError("histogram: encode must map each row to one cell (a row-wise map)")
        exact = np.bincount(codes[codes >= 0], minlength=n_cells)[:n_cells]
        return self._counts(exact).measure(rho=rho, epsilon=epsilon, target=target).astype(np.int64)

    def marginal(self, grid, clique: Sequence[int], *, rho: float | None = None, epsilon: float | None = None,
                 maps: Sequence[np.ndarray] | None = None, target: str | None = None) -> np.ndarray:
        """Noisy counts of a clique of a public grid (L1 = L2 sensitivity 1).

        Parameters
        ----------
        grid : PublicGrid
            The public cells (from the schema only).
        clique : sequence of int
            Column indices of the grid.
        rho, epsilon : float, optional
            As for :meth:`histogram`.
        maps : sequence of numpy.ndarray, optional
            Per column of ``clique``, a public map from the grid's cells to compressed cells.
        target : str, optional
            Defaults to ``"k-way marginal of (names)"``.

        Returns
        -------
        numpy.ndarray of int64, shape = the clique's (compressed) cells
        """
        clique = tuple(int(j) for j in clique)
        exact, shape = self._exact(grid, clique, maps)
        if target is None:
            names = tuple(grid.columns[j].spec.name for j in clique)
            target = f"{len(clique)}-way marginal of {names!r}"
        return self._counts(exact).measure(rho=rho, epsilon=epsilon, target=target).astype(np.int64).reshape(shape)

    def select_marginal(self, grid, cliques: Sequence[Sequence[int]], estimates: Sequence[np.ndarray], *,
                        rho: float | None, weights: Sequence[float] | None = None,
                        penalties: Sequence[float] | None = None, maps: Sequence[np.ndarray] | None = None,
                        target: str) -> int:
        """Pick the clique whose marginal is worst explained by a public estimate (exponential mechanism, zCDP).

        Utility ``w_r (||M_r(D) - estimates[r]||_1 - penalties[r])``; adding or removing one person moves one cell
        of ``M_r`` by 1, so the utility by at most ``w_r``: sensitivity ``max_r w_r``.

        Parameters
        ----------
        grid : PublicGrid
            The public cells.
        cliques : sequence of sequence of int
            The candidates.
        estimates : sequence of numpy.ndarray, or numpy.ndarray
            Public (post-processed) estimates of each candidate's marginal, in its (compressed) shape; or one
            1-D array of every candidate's cells, candidate after candidate (C order).
        rho : float or None
            Cost; ``None`` (non-private) takes the argmax.
        weights, penalties : sequence of float, optional
            Default 1 and 0.
        maps : sequence of numpy.ndarray, optional
            Public per-column cell maps of the whole grid (indexed by column).
        target : str
            For the budget log.

        Returns
        -------
        int
            Index of the chosen candidate.
        """
        if self.private and rho is None:
            raise ValueError(f"{target}: a private selection needs rho")
        k = len(cliques)
        flat, sizes = self._candidate_counts(grid, cliques, maps)
        if isinstance(estimates, np.ndarray) and estimates.ndim == 1:
            guess = estimates.astype(float, copy=False)
        else:
            guess = np.concatenate([np.asarray(e, dtype=float).reshape(-1) for e in estimates]) if k else np.zeros(0)
            if not np.array_equal([np.size(e) for e in estimates], sizes):
                raise ValueError(f"{target}: every estimate must have its clique's cells")
        if guess.shape != flat.shape:
            raise ValueError(f"{target}: the estimates must have the candidates' {flat.size} cells")
        # ||M_r(D) - estimate_r||_1 of every candidate: one person moves one cell of each M_r by 1, hence each
        # error by at most 1 (triangle inequality): one group per candidate, bound 1
        errors = np.bincount(np.repeat(np.arange(k), sizes), weights=np.abs(flat - guess), minlength=k)
        vector = self._vector(errors, np.arange(k), np.ones(k))
        return vector.select(np.arange(k)[:, None], np.zeros((k, 1)), rho=rho, weights=weights,
                             penalties=penalties, target=target)

    def count(self, *, rho: float | None = None, epsilon: float | None = None,
              target: str = "number of people") -> int:
        """Noisy number of people (sensitivity 1); may be below 1 (clip as post-processing)."""
        return int(self._counts(np.array([len(self.__rows)])).measure(rho=rho, epsilon=epsilon, target=target)[0])

    def nonprivate_rows(self, why: str) -> pd.DataFrame:
        """The rows themselves, for a non-private fit (``epsilon=None``) only; recorded as a non-private use.

        Raises
        ------
        PermissionError
            When the table is private.
        """
        self._open(why)
        return self.__rows

    def dpsgd(self, encode: Callable[[pd.DataFrame], np.ndarray], optimizer, *, plan, sample_rate: float,
              expected_batch_size: int, target: str, generator=None, loss_reduction: str = "sum",
              where: Callable[[pd.DataFrame], np.ndarray] | None = None, details: dict | None = None):
        """Per-sample-clipped gradient steps on a public row-wise encoding: the DP-SGD door.

        Charges ``plan`` (a :class:`~skdpsynth.privacy._dpsgd.DPSGDPlan`: Poisson rate ``q``, per-example clipping
        ``C``, Gaussian noise ``sigma C``, its RDP (epsilon, delta) under add/remove one person) before anything is
        drawn, wraps ``optimizer`` so that every step clips each example's gradient to ``C`` and adds the noise,
        and gives the encoded rows out only as Poisson batches at rate ``q``; both draw from the secret noise
        source. Without privacy (``epsilon=None``) the use is recorded and the batches come at ``sample_rate``
        from ``generator`` (with ``plan`` given, its clipping without noise). ``where`` is a public row-wise
        filter (a person kept or not: the contribution bound stays 1); ``details`` are added to the plan's
        budget record.

        Returns
        -------
        optimizer
            The DP optimizer (or ``optimizer`` itself without privacy).
        batches : PoissonBatches
        """
        import torch

        from skdpsynth.privacy._dpsgd import PoissonBatches, dp_optimizer, dpsgd_record

        kept = self.__rows if where is None else self.__rows[np.asarray(where(self.__rows), dtype=bool)]
        rows = torch.from_numpy(np.asarray(encode(kept)))
        if not self.private:
            self._accountant.declare_nonprivate(target)
            if plan is not None:  # clipping as planned, without noise
                optimizer = dp_optimizer(optimizer, plan, generator, expected_batch_size=expected_batch_size,
                                         loss_reduction=loss_reduction)
            return optimizer, PoissonBatches(rows, sample_rate, generator)
        record = dpsgd_record(plan, target)
        self._accountant.spend(replace(record, details={**record.details, **(details or {})}))
        noise_gen = self._noise.torch_generator()  # batches and gradient noise: both part of the mechanism
        optimizer = dp_optimizer(optimizer, plan, noise_gen, expected_batch_size=expected_batch_size,
                                 loss_reduction=loss_reduction)
        return optimizer, PoissonBatches(rows, plan.sample_rate, noise_gen)

    def teachers(self, encode: Callable[[pd.DataFrame], np.ndarray], n_teachers: int) -> TeacherPartitions:
        """The encoded rows split among PATE's teachers by a secret partition (see ``TeacherPartitions``).

        Nothing is charged here: a teacher's data reach the release only through the votes, which
        :class:`~skdpsynth.privacy._pate.GNMaxAggregator` answers under its charged plan (one person moves one
        teacher's vote: L2 sensitivity ``sqrt(2)`` per query). Without privacy, the use is recorded.
        """
        if not self.private:
            self._accountant.declare_nonprivate(f"{n_teachers} teachers trained on the rows")
        return TeacherPartitions(np.asarray(encode(self.__rows)), n_teachers, self._noise)

    # -- internals ------------------------------------------------------------------------
    def _codes(self, grid) -> np.ndarray:
        """The grid's codes of every row, encoded once per grid (the grid is held so its id stays unique)."""
        key = id(grid)
        if key not in self.__codes:
            self.__codes[key] = (grid, grid.encode(self.__rows))
        return self.__codes[key][1]

    def _candidate_counts(self, grid, cliques, maps) -> tuple[np.ndarray, np.ndarray]:
        """Exact counts of the candidates, candidate after candidate (flat), and each candidate's number of cells.

        Every clique is counted once per grid and maps; its counts are kept in one flat array on the handle (never
        returned while private), from which each selection gathers its candidates.
        """
        key = (id(grid), None if maps is None else tuple(np.asarray(m).tobytes() for m in maps))
        store = self.__stores.get(key)
        if store is None:  # flat counts; per clique its number in "at", and its offset and size at that number
            store = self.__stores[key] = {"at": {}, "parts": [], "flat": np.zeros(0, dtype=np.int64),
                                          "offset": [], "size": [], "offsets": None, "sizes": None}
        at = store["at"]
        try:
            number = np.fromiter(map(at.__getitem__, cliques), dtype=np.int64, count=len(cliques))
        except (KeyError, TypeError):  # a clique not counted yet, or not given as a tuple
            cliques = [tuple(int(j) for j in c) for c in cliques]
            new = [c for c in dict.fromkeys(cliques) if c not in at]
            columns = {j: self._column(grid, j, None if maps is None else maps[j]) for c in new for j in c}
            for c in new:  # each column resolved once, then every new clique counted from them
                flat, size = self._combine([columns[j] for j in c]) if c else (self._flat(grid, c, None)[0], 1)
                counts = np.bincount(flat, minlength=size)
                at[c] = len(store["size"])
                store["offset"].append(sum(store["size"][-1:]) + sum(store["offset"][-1:]))
                store["size"].append(counts.size)
                store["parts"].append(counts)
            store["flat"] = np.concatenate([store["flat"], *store["parts"]])
            store["parts"] = []
            store["offsets"], store["sizes"] = np.array(store["offset"]), np.array(store["size"])
            number = np.fromiter(map(at.__getitem__, cliques), dtype=np.int64, count=len(cliques))
        offsets, sizes = store["offsets"][number], store["sizes"][number]
        starts = np.cumsum(sizes) - sizes
        index = np.repeat(offsets - starts, sizes) + np.arange(int(sizes.sum()))
        return store["flat"][index], sizes

    def _exact(self, grid, clique: tuple[int, ...], maps) -> tuple[np.ndarray, tuple[int, ...]]:
        """Exact counts of a clique and their shape, counted once."""
        key = (id(grid), clique, None if maps is None else tuple(np.asarray(m).tobytes() for m in maps))
        if key not in self.__exact:
            flat, shape = self._flat(grid, clique, maps)
            self.__exact[key] = (np.bincount(flat, minlength=int(np.prod(shape))), shape)
        return self.__exact[key]

    def _column(self, grid, j: int, mapping) -> tuple[np.ndarray, int]:
        """Column ``j``'s cell of every row (through a public map when given) and its number of cells, kept."""
        digest = None if mapping is None else np.asarray(mapping).tobytes()
        key = (id(grid), j, digest)
        if key not in self.__columns:
            col = np.ascontiguousarray(self._codes(grid)[:, j], dtype=np.int64)
            if mapping is None:
                self.__columns[key] = (col, int(grid.columns[j].n_cells))
            else:
                self.__columns[key] = (np.asarray(mapping)[col], int(np.max(mapping)) + 1)
        return self.__columns[key]

    def _flat(self, grid, clique: tuple[int, ...], maps) -> tuple[np.ndarray, tuple[int, ...]]:
        """Every row's cell of the clique (C order) and the clique's shape."""
        columns = [self._column(grid, j, None if maps is None else maps[i]) for i, j in enumerate(clique)]
        if not columns:
            return np.zeros(self._codes(grid).shape[0], dtype=np.int64), ()
        return self._combine(columns)[0], tuple(size for _, size in columns)

    @staticmethod
    def _combine(columns: list[tuple[np.ndarray, int]]) -> tuple[np.ndarray, int]:
        """Every row's cell of several columns' cells (C order) and the number of such cells."""
        flat, total = columns[0]
        for col, size in columns[1:]:
            flat, total = flat * size + col, total * size
        return flat, total

    def _counts(self, exact: np.ndarray) -> PrivateVector:
        """Counts of people in disjoint cells: one group, bound 1 (a person is in one cell)."""
        return self._vector(exact, np.zeros(exact.size, dtype=np.int64), np.ones(1))
