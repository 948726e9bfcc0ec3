"""ValidityCheck: schema conformance of tables and well-formedness of event sequences."""

from __future__ import annotations

from typing import Any

from skdpsynth.audit._base import AuditData, BaseCheck, CheckResult, require_columns
from skdpsynth.audit._checks_common import is_schema
from skdpsynth.metrics._validity import schema_validity, sequence_validity
from skdpsynth.schema import resolve_schema

__all__ = ["ValidityCheck"]


class ValidityCheck(BaseCheck):
    """Schema conformance (tables) and sequence well-formedness (long tables).

    Score: the share of valid rows (or learners, for sequences; the smaller of
    the two when both apply). Passes when it is at least
    ``min_valid_fraction``.

    The table part needs a public domain: the check's ``schema``, else the
    audit's (the auditor's, or the synthesizer's ``schema_`` when public).
    Bounds read from the real rows are never used: without a public schema
    the table part is not checked and the reason says so (``on_missing_schema``
    decides whether that makes the check not applicable or failed).

    Parameters
    ----------
    schema : TableSchema, dict or path, optional
        The public schema; default: the audit's schema.
    min_valid_fraction : float, default=1.0
        PEARL requires a fully valid release.
    id_col, event_col, order_col, label_col : str, optional
        Long-table columns; when ``id_col`` is given, sequences are checked too.
    vocabulary : sequence or dict, optional
        Allowed event values (per event column when a dict).
    max_length : int, optional
        Longest allowed sequence.
    on_missing_schema : {"not_applicable", "fail"}, default="not_applicable"
        What a table without a public schema (and no sequences to check) gives.
    """

    name = "validity"

    def __init__(self, *, schema=None, min_valid_fraction=1.0, id_col=None, event_col=None, order_col=None,
                 label_col=None, vocabulary=None, max_length=None, on_missing_schema="not_applicable"):
        self.schema = schema
        self.min_valid_fraction = min_valid_fraction
        self.id_col = id_col
        self.event_col = event_col
        self.order_col = order_col
        self.label_col = label_col
        self.vocabulary = vocabulary
        self.max_length = max_length
        self.on_missing_schema = on_missing_schema

    def check_inputs(self, holdout, schema=None) -> None:
        if self.id_col is not None:
            require_columns(self, holdout, {"id": self.id_col, "event": self.event_col, "order": self.order_col,
                                            "label": self.label_col})

    def _schema(self, data: AuditData) -> Any:
        schema = resolve_schema(self.schema) if self.schema is not None else data.schema
        return schema if is_schema(schema) else None

    def _no_domain(self, threshold: dict) -> CheckResult:
        if self.on_missing_schema not in ("not_applicable", "fail"):
            raise ValueError(f"on_missing_schema must be 'not_applicable' or 'fail', got {self.on_missing_schema!r}.")
        msg = ("validity has no public domain to check: give a public schema (the codebook's), or audit a "
               "synthesizer whose schema_ is public")
        fail = self.on_missing_schema == "fail"
        return CheckResult(self.name, float("nan") if not fail else 0.0, not fail, self._threshold(),
                           ("validity: " if fail else "not applicable: ") + msg,
                           {"schema_source": "none"}, applicable=fail, uses_confidential_data=False)

    def _threshold(self) -> dict:
        return {"min_valid_fraction": self.min_valid_fraction}

    def _evaluate(self, data: AuditData) -> CheckResult:
        schema = self._schema(data)
        if schema is None and self.id_col is None:
            return self._no_domain(self._threshold())
        details: dict[str, Any] = {}
        scores, problems = [], []
        if schema is not None:
            details["schema_source"] = "public schema" if getattr(schema, "public", True) else \
                "schema not confirmed public"
            table = schema_validity(data.synthetic, schema)
            details["table"] = table
            scores.append(table["valid_fraction"])
            if table["missing_columns"]:
                problems.append(f"columns {table['missing_columns']} are missing")
            if table["extra_columns"]:
                problems.append(f"unexpected columns {table['extra_columns']}")
            for col, probs in table["problems"].items():
                problems.append(f"{col!r}: " + ", ".join(f"{n} values {p}" for p, n in probs.items()))
        else:
            details["schema_source"] = "none (no public schema: table columns not checked)"
        if self.id_col is not None:
            if self.event_col is None:
                raise ValueError("ValidityCheck: give event_col with id_col to check sequences.")
            seq = sequence_validity(data.synthetic, id_col=self.id_col, event_col=self.event_col,
                                    order_col=self.order_col, label_col=self.label_col, vocabulary=self.vocabulary,
                                    max_length=self.max_length)
            details["sequences"] = seq
            scores.append(seq["valid_fraction"])
            if seq["missing_columns"]:
                problems.append(f"sequence columns {seq['missing_columns']} are missing")
            problems += [f"{n} learners: {p}" for p, n in seq["problems"].items()]
        score = float(min(scores))
        missing_cols = bool(details.get("table", {}).get("missing_columns"))
        passed = score >= self.min_valid_fraction and not missing_cols
        where = details["schema_source"] if schema is not None else "sequence rules"
        if passed:
            reason = f"{score:.1%} of the release is valid against the {where}"
        else:
            reason = (f"only {score:.1%} of the release is valid (needs {self.min_valid_fraction:.0%}): "
                      + "; ".join(problems[:6]) + (" ..." if len(problems) > 6 else ""))
        # counts of synthetic rows reveal the release size, which is private unless it is a DP estimate
        secret = not data.release_size_public or (schema is not None and not getattr(schema, "public", True))
        public = (f"validity: the release is valid against the {where}" if passed else
                  f"validity: less than {self.min_valid_fraction:.0%} of the release is valid against the {where}")
        return CheckResult(self.name, score, passed, self._threshold(), reason, details,
                           confidential=[k for k in details if k != "schema_source"] if secret else [],
                           public_reason=public if secret else reason, uses_confidential_data=secret)
