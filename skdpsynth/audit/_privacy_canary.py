"""Worst-case neighbouring datasets for a privacy audit: a background population and one canary.

The canary is a person whose record is unique: in a table, a category and a
value no one else has (so the canary's cells are empty without them); in event
sequences, a learner whose ``max_length`` events are all of an event no one
else produces (the largest contribution the synthesizer's public bound
allows). The two datasets differ by exactly that person (the add/remove-one-
person relation of :data:`skdpsynth.privacy.NEIGHBOURING`).

The domain handed to the synthesizer (schema, vocabulary) is public and lists
the canary's values, as a codebook would: only the counts can reveal the canary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from skdpsynth.schema import TableSchema
from skdpsynth.utils._random import check_random_state

__all__ = ["Neighbours", "make_neighbours", "audit_schema"]

#: background categories, their frequencies, and the canary's own category
_COURSES = ("art", "bio", "math")
_COURSE_P = (0.5, 0.3, 0.2)
_CANARY_COURSE = "rare"
_AGE_RANGE = (17, 24)  # the canary alone has the upper bound
#: background events; the canary's event
_EVENTS = ("a", "b", "c")
_CANARY_EVENT = "x"
#: longest background sequence (the canary has the synthesizer's max_length)
_BACKGROUND_MAX_LENGTH = 5


def audit_schema() -> TableSchema:
    """The small public schema of the default tabular audit (it lists the canary's category)."""
    return TableSchema.from_dict({
        "course": {"kind": "categorical", "categories": [*_COURSES, _CANARY_COURSE], "nullable": False},
        "age": {"kind": "integer", "lower": _AGE_RANGE[0], "upper": _AGE_RANGE[1], "nullable": False},
    })


@dataclass(frozen=True)
class Neighbours:
    """Two neighbouring datasets that differ by one canary person.

    Attributes
    ----------
    without : pandas.DataFrame
        The background population (the canary left out).
    with_canary : pandas.DataFrame
        The same people plus the canary.
    canary : pandas.DataFrame
        The canary's rows (one row in a table; their events for sequences).
    kind : {"table", "sequence"}
        What the synthesizer takes.
    public_params : dict
        Public domain parameters set on the synthesizer when it has them and
        they are None (``schema`` for tables, ``vocabulary`` for sequences).
    columns : dict
        For sequences: ``{"id": ..., "order": ..., "event": [...]}``; empty for tables.
    """

    without: pd.DataFrame
    with_canary: pd.DataFrame
    canary: pd.DataFrame
    kind: str = "table"
    public_params: dict = field(default_factory=dict)
    columns: dict = field(default_factory=dict)

    def data(self, canary_in: bool) -> pd.DataFrame:
        """The dataset with (True) or without (False) the canary."""
        return self.with_canary if canary_in else self.without

    @property
    def schema(self) -> TableSchema | None:
        """The public schema (tables), if one was given."""
        schema = self.public_params.get("schema")
        return schema if isinstance(schema, TableSchema) else None


def _is_sequence(estimator: Any) -> bool:
    params = estimator.get_params(deep=False)
    return "event_columns" in params and "id_column" in params


def make_neighbours(estimator: Any, *, n_people: int = 100, random_state: Any = None) -> Neighbours:
    """Build the audit's worst-case neighbouring datasets for ``estimator``.

    Parameters
    ----------
    estimator : synthesizer
        A tabular synthesizer (the datasets follow :func:`audit_schema`) or a
        sequence synthesizer without label or static columns (event column(s)
        named by its ``event_columns``; the canary has ``max_length`` events).
    n_people : int, default=100
        People in the dataset with the canary (the other has ``n_people - 1``).
    random_state : None, int or Generator
        Draws the background population.

    Returns
    -------
    Neighbours
    """
    if int(n_people) < 2:
        raise ValueError(f"n_people must be at least 2, got {n_people!r}.")
    rng = check_random_state(random_state)
    if _is_sequence(estimator):
        return _sequence_neighbours(estimator, int(n_people), rng)
    return _table_neighbours(int(n_people), rng)


def _table_neighbours(n_people: int, rng: np.random.Generator) -> Neighbours:
    n = n_people - 1
    background = pd.DataFrame({
        "course": rng.choice(np.array(_COURSES, dtype=object), size=n, p=_COURSE_P),
        "age": rng.integers(_AGE_RANGE[0], _AGE_RANGE[1], size=n),  # upper bound excluded: the canary's
    })
    canary = pd.DataFrame({"course": [_CANARY_COURSE], "age": [_AGE_RANGE[1]]})
    with_canary = pd.concat([background, canary], ignore_index=True)
    return Neighbours(background, with_canary, canary, "table", {"schema": audit_schema()})


def _sequence_neighbours(estimator: Any, n_people: int, rng: np.random.Generator) -> Neighbours:
    params = estimator.get_params(deep=False)
    if params.get("label_column") is not None or params.get("static_columns"):
        raise ValueError("the default sequence neighbours have no label or static columns; build a Neighbours "
                         "with them for this synthesizer.")
    id_col, order_col = params["id_column"], params["order_column"]
    events = params["event_columns"]
    events = [events] if isinstance(events, str) else list(events)
    max_length = int(params["max_length"])
    n = n_people - 1
    lengths = rng.integers(1, min(max_length, _BACKGROUND_MAX_LENGTH) + 1, size=n)
    ids = np.repeat(np.arange(n), lengths)
    order = np.arange(len(ids)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    frame = {id_col: ids, order_col: order}
    drawn = rng.choice(np.array(_EVENTS, dtype=object), size=(len(ids), len(events)))
    for j, col in enumerate(events):
        frame[col] = drawn[:, j]
    background = pd.DataFrame(frame)
    canary = pd.DataFrame({id_col: np.full(max_length, n), order_col: np.arange(max_length),
                           **{col: [_CANARY_EVENT] * max_length for col in events}})
    with_canary = pd.concat([background, canary], ignore_index=True)
    alphabet = [*_EVENTS, _CANARY_EVENT]
    vocabulary = alphabet if len(events) == 1 else {col: alphabet for col in events}
    return Neighbours(background, with_canary, canary, "sequence", {"vocabulary": vocabulary},
                      {"id": id_col, "order": order_col, "event": events})
