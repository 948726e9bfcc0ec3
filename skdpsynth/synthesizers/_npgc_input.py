"""NPGC's input: validation and the reduction of a cohort to its exact statistics, before any budget is spent.

A table in memory is read in row chunks (each validated against the schema and
encoded, no normalised copy of the whole table); an iterable of DataFrames or
a Dask DataFrame (:mod:`skdpsynth._chunks`) chunk by chunk or partition by
partition, on the cluster when a ``distributed.Client`` is running.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from skdpsynth._chunks import is_chunked, leading_rows, map_reduce
from skdpsynth.base import TableInput
from skdpsynth.exceptions import SchemaError
from skdpsynth.privacy._copula_statistics import CohortStatistics, frame_statistics
from skdpsynth.schema import TableSchema, resolve_schema
from skdpsynth.synthesizers._npgc_cells import NPGCColumnCells, build_cells
from skdpsynth.utils._validation import check_table

__all__ = ["NPGCInput"]


class NPGCInput:
    """Mixin of :class:`~skdpsynth.synthesizers._npgc.NPGCSynthesizer`: its ``_check_input``."""

    def _check_input(self, X: Any, y: Any, reset: bool) -> TableInput:
        """Validate and, when the schema is known, reduce the cohort to its exact statistics, chunk by chunk.

        A table in memory is read in row chunks (no normalised copy); an
        iterable of DataFrames or a Dask DataFrame (:mod:`skdpsynth._chunks`)
        chunk by chunk or partition by partition. Everything is validated before
        any budget is spent. The statistics travel as the ``normalised`` part of
        the :class:`TableInput`, which the base class hands to :meth:`_fit_table`
        unchanged (its ``frame``: the table, or the leading chunk of chunked
        input, for the dtypes). Without a schema the base class estimates the
        domain first and :meth:`_fit_table` gets the normalised table.
        """
        if is_chunked(X):
            if y is not None:
                raise ValueError("with chunked input y must be a column of every chunk; pass y=None.")
            return self._chunked_statistics(X, reset)
        frame = self._check_columns(X, y, reset)
        schema = self._public_schema(reset)
        if schema is None:
            return TableInput(frame)
        try:
            stats = frame_statistics(frame, self._cells_for(schema, reset), schema=schema,
                                     exact_values=self.epsilon is None)
        except SchemaError:
            schema.validate(frame)  # the message about the whole table, not one chunk
            raise
        return TableInput(frame, stats, stats.clipped)

    def _public_schema(self, reset: bool) -> TableSchema | None:
        """The schema the statistics can be computed on before any budget is spent (given, and the fitted one)."""
        given = resolve_schema(self.schema)
        if given is None or (not reset and getattr(self, "schema_", None) != given):
            return None
        return given

    def _cells_for(self, schema: TableSchema, reset: bool) -> tuple[NPGCColumnCells, ...]:
        return build_cells(schema, self.n_bins, self.max_integer_cells) if reset else self.cells_

    def _chunked_statistics(self, X: Any, reset: bool) -> TableInput:
        schema = self._public_schema(reset)
        if schema is None:
            raise SchemaError("fitting from chunks needs the public schema (schema=...): the domain of a table "
                              "that is never in memory at once cannot be estimated first.")
        head, rest = leading_rows(X, 2)
        head = self._check_columns(head, None, reset)
        part = _ChunkStatistics(self.columns_, self._cells_for(schema, reset), schema, self.epsilon is None)
        first = None if rest is None else part(head)  # a Dask head is read again with its partition
        stats = map_reduce(X, part, CohortStatistics.merge, first=first, rest=rest)
        return TableInput(head, stats, stats.clipped)


class _ChunkStatistics:
    """The statistics of one chunk of chunked input (picklable, to run on a Dask worker)."""

    def __init__(self, columns: tuple, cells: tuple[NPGCColumnCells, ...], schema: TableSchema,
                 exact_values: bool) -> None:
        self.columns, self.cells, self.schema, self.exact_values = columns, cells, schema, exact_values

    def __call__(self, frame: pd.DataFrame) -> CohortStatistics:
        if len(frame):
            frame = check_table(frame, min_rows=1)
            if tuple(frame.columns) != self.columns:
                raise SchemaError(f"a chunk has columns {list(frame.columns)} but the first chunk had "
                                  f"{list(self.columns)}; every chunk must have the same columns in the same order.")
        return frame_statistics(frame, self.cells, schema=self.schema, exact_values=self.exact_values)

