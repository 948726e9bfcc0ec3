"""The release ledger: append-only, hash-chained JSON lines.

Every entry is one JSON object on one line with ``seq`` (0, 1, ...),
``prev_hash`` (the previous entry's ``hash``; 64 zeros for the first),
``timestamp`` (UTC, ISO 8601), ``event`` (``"fit"``, ``"partial_fit"``,
``"audit"``, ``"release"``, ...) and the event's payload; ``hash`` is the
SHA-256 of the canonical JSON (sorted keys, no spaces) of everything else. Any
edit of an entry changes its hash; deleting or reordering entries breaks the
``prev_hash`` chain or the ``seq`` numbering. Truncating the tail leaves a
valid shorter chain: keep the last ``head`` somewhere else (e.g. in the release
notes) and pass it to :meth:`Ledger.verify` to detect that too.

Fields computed on confidential data (membership AUC, train-on-real scores,
subgroup recalls, ...) are listed in each entry's ``confidential_fields``
(dotted paths), so a ledger can be published with them redacted.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import platform
from collections.abc import Iterator
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

from skdpsynth.audit._base import jsonable

__all__ = ["Ledger", "LedgerIntegrityError", "library_versions", "synthesizer_record"]

GENESIS = "0" * 64


class LedgerIntegrityError(ValueError):
    """The ledger file was edited, truncated, reordered or is not valid JSON lines."""


def _canonical(entry: dict[str, Any]) -> bytes:
    return json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def _digest(entry: dict[str, Any]) -> str:
    return hashlib.sha256(_canonical({k: v for k, v in entry.items() if k != "hash"})).hexdigest()


def library_versions() -> dict[str, str]:
    """Versions of Python and of the libraries that shape a release."""
    import sys

    out = {"python": platform.python_version()}
    for name in ("skdpsynth", "numpy", "pandas", "scipy", "sklearn", "torch", "opacus"):
        mod = sys.modules.get(name)
        if mod is None and name in ("skdpsynth", "numpy", "pandas", "scipy", "sklearn"):
            import importlib

            mod = importlib.import_module(name)
        if mod is not None:
            out[name] = str(getattr(mod, "__version__", "unknown"))
    return out


def synthesizer_record(synthesizer: Any) -> dict[str, Any]:
    """Class, parameters, seed, privacy spend and budget log of a fitted synthesizer (duck-typed)."""
    if synthesizer is None:
        return {"class": None}
    rec: dict[str, Any] = {"class": f"{type(synthesizer).__module__}.{type(synthesizer).__qualname__}"}
    try:
        params = synthesizer.get_params(deep=False)
    except Exception:  # noqa: BLE001 - any duck type
        params = {}
    rec["params"] = jsonable(params)
    rec["random_state"] = jsonable(params.get("random_state"))
    try:
        spent = synthesizer.privacy_spent_
        rec["privacy_spent"] = jsonable(asdict(spent) if is_dataclass(spent) else spent)
    except Exception as exc:  # noqa: BLE001 - unfitted or no accounting
        rec["privacy_spent"] = f"unavailable ({type(exc).__name__})"
    log = getattr(synthesizer, "budget_log_", None)
    rec["budget_log"] = None if log is None else [jsonable(r.to_dict() if hasattr(r, "to_dict") else r) for r in log]
    schema = getattr(synthesizer, "schema_", None)
    if schema is not None and hasattr(schema, "public"):
        rec["schema_public"] = bool(schema.public)
    return rec


class Ledger:
    """Append-only, hash-chained JSON-lines log of fits, audits and releases.

    Parameters
    ----------
    path : str or PathLike
        The ``.jsonl`` file (created on the first append).

    Examples
    --------
    >>> import tempfile, os
    >>> led = Ledger(os.path.join(tempfile.mkdtemp(), "ledger.jsonl"))
    >>> _ = led.append("note", {"text": "first"})
    >>> led.verify()
    True
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"Ledger({str(self.path)!r})"

    # reading -----------------------------------------------------------------
    def _lines(self) -> Iterator[tuple[int, dict[str, Any]]]:
        if not self.path.exists():
            return
        with open(self.path, encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise LedgerIntegrityError(f"{self.path}: line {lineno} is not valid JSON ({exc.msg}).") from exc
                if not isinstance(entry, dict):
                    raise LedgerIntegrityError(f"{self.path}: line {lineno} is not a JSON object.")
                yield lineno, entry

    def read(self) -> list[dict[str, Any]]:
        """All entries, oldest first (not verified; see :meth:`verify`)."""
        return [e for _, e in self._lines()]

    def __len__(self) -> int:
        return len(self.read())

    @property
    def head(self) -> str:
        """The last entry's hash (64 zeros for an empty ledger)."""
        entries = self.read()
        return entries[-1]["hash"] if entries else GENESIS

    def verify(self, *, head: str | None = None, raise_on_error: bool = False) -> bool:
        """Check every hash, the chain and the numbering.

        Parameters
        ----------
        head : str, optional
            The expected last hash, kept elsewhere: detects a truncated tail.
        raise_on_error : bool, default=False
            Raise :class:`LedgerIntegrityError` with the first problem instead
            of returning False.

        Returns
        -------
        bool
        """
        try:
            self._verify(head)
        except LedgerIntegrityError:
            if raise_on_error:
                raise
            return False
        return True

    def problems(self, *, head: str | None = None) -> list[str]:
        """Every integrity problem found (empty when the ledger verifies)."""
        out = []
        prev = GENESIS
        try:
            for i, (lineno, e) in enumerate(self._lines()):
                if e.get("seq") != i:
                    out.append(f"line {lineno}: seq {e.get('seq')} where {i} was expected (deleted or reordered)")
                if e.get("prev_hash") != prev:
                    out.append(f"line {lineno}: prev_hash does not match the previous entry (deleted, inserted or "
                               "reordered entries)")
                if e.get("hash") != _digest(e):
                    out.append(f"line {lineno}: content does not match its hash (edited)")
                prev = e.get("hash")
        except LedgerIntegrityError as exc:
            out.append(str(exc))
        if head is not None and prev != head:
            out.append(f"last hash {prev[:12]}... differs from the expected head {head[:12]}... (truncated or "
                       "extended)")
        return out

    def _verify(self, head: str | None) -> None:
        found = self.problems(head=head)
        if found:
            raise LedgerIntegrityError(f"{self.path}: " + "; ".join(found))

    # writing -----------------------------------------------------------------
    def append(self, event: str, payload: dict[str, Any], *, confidential_fields: list[str] | None = None
               ) -> dict[str, Any]:
        """Append one entry and return it (with ``seq``, ``prev_hash``, ``hash``).

        The existing ledger is verified first: nothing is appended to a broken chain.
        """
        if not isinstance(event, str) or not event:
            raise ValueError("event must be a non-empty string such as 'audit' or 'release'.")
        self._verify(None)
        entries = self.read()
        reserved = {"seq", "prev_hash", "hash", "timestamp", "event", "confidential_fields"}
        clash = sorted(reserved & set(payload))
        if clash:
            raise ValueError(f"payload keys {clash} are reserved by the ledger.")
        entry = {
            "seq": len(entries),
            "prev_hash": entries[-1]["hash"] if entries else GENESIS,
            "timestamp": _dt.datetime.now(_dt.UTC).isoformat(timespec="microseconds"),
            "event": event,
            **jsonable(payload),
            "confidential_fields": sorted(confidential_fields or []),
        }
        entry["hash"] = _digest(entry)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(_canonical(entry).decode() + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        return entry

    def record_fit(self, synthesizer: Any, *, event: str = "fit", n_rows: int | None = None,
                   note: str | None = None) -> dict[str, Any]:
        """Log a fit (or ``event="partial_fit"``): class, params, seed, privacy spend, budget log."""
        payload = {"synthesizer": synthesizer_record(synthesizer), "library_versions": library_versions()}
        if n_rows is not None:
            payload["n_rows"] = int(n_rows)
        if note:
            payload["note"] = note
        return self.append(event, payload, confidential_fields=["n_rows"] if n_rows is not None else [])

    def record_audit(self, report: Any) -> dict[str, Any]:
        """Log an :class:`~skdpsynth.audit.AuditReport` (its ``ledger_payload``)."""
        payload, confidential = report.ledger_payload()
        return self.append("audit", payload, confidential_fields=confidential)

    def record_release(self, synthetic: Any, *, synthesizer: Any = None, report: Any = None,
                       destination: str | None = None, note: str | None = None) -> dict[str, Any]:
        """Log a release: a SHA-256 fingerprint of the released table, its shape, the audit it passed."""
        import pandas as pd

        digest = hashlib.sha256(pd.util.hash_pandas_object(synthetic, index=False).to_numpy().tobytes()).hexdigest()
        payload: dict[str, Any] = {
            "synthetic_sha256": digest, "n_rows": int(len(synthetic)), "columns": [str(c) for c in synthetic.columns],
            "synthesizer": synthesizer_record(synthesizer), "library_versions": library_versions(),
        }
        if report is not None:
            payload["approved"] = bool(report.approved)
            payload["reasons"] = list(report.reasons)
            payload["audit_id"] = report.audit_id
        if destination is not None:
            payload["destination"] = str(destination)
        if note:
            payload["note"] = note
        return self.append("release", payload)
