"""AuditReport: the verdict, one reason per failed check, provenance -- results only (rendering: AuditReportDisplay)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from skdpsynth.audit._base import CheckResult, jsonable
from skdpsynth.audit._display import AuditReportDisplay, format_value
from skdpsynth.audit._provenance import seed_paths, synthesizer_confidential

__all__ = ["AuditReport"]

#: the exact verdict: confidential unless every check read public inputs only
_EXACT_VERDICT = ("approved", "public_reasons")


@dataclass
class AuditReport:
    """The outcome of :meth:`ReleaseAuditor.audit`: results and provenance, no confidential rows.

    Rendering (markdown, HTML, plots, files) is :class:`AuditReportDisplay`'s
    job; :meth:`to_markdown`, :meth:`to_html`, :meth:`figures` and :meth:`save`
    are shortcuts to it.

    Attributes
    ----------
    results : dict of str to CheckResult
        In check order.
    approved : bool
        True only when every applicable check passed.
    reasons : list of str
        One readable reason per failed applicable check (may quote
        confidential numbers).
    public_reasons : list of str
        The same without confidential numbers (which rule failed). Which
        rule failed is itself a statistic of the real rows: in the ledger it
        is confidential unless every check read public inputs only; see
        :attr:`verdict` for what may be published.
    synthesizer : dict
        Class, params, seed, privacy spend, budget log and DP size estimate
        (empty class when a table was audited without its synthesizer).
    privacy : dict or None
        The release's formal guarantee (:func:`~skdpsynth.audit.release_privacy`).
    seeds, data, library_versions, timestamp, audit_id, elapsed_s, checks
        Provenance recorded in the ledger.
    synthetic : DataFrame
        The audited release (public once approved).
    schema : TableSchema or None
        The public schema used.
    artifacts : dict
        Aggregates for plots (e.g. per-column marginal shares of the real
        holdout): statistics of confidential data, never written to the
        ledger or the JSON report.
    ledger_entry : dict or None
        Path, ``seq`` and ``hash`` of the ledger entry, when logged.
    audit_budget : dict or None
        What the published verdicts cost (``ReleaseAuditor(verdict_epsilon=...)``):
        epsilon, delta, neighbouring relation and budget records.
    """

    results: dict[str, CheckResult]
    synthesizer: dict = field(default_factory=dict)
    privacy: dict | None = None
    seeds: dict = field(default_factory=dict)
    data: dict = field(default_factory=dict)
    library_versions: dict = field(default_factory=dict)
    timestamp: str = ""
    audit_id: str = ""
    elapsed_s: float = 0.0
    checks: dict = field(default_factory=dict)
    synthetic: pd.DataFrame | None = field(default=None, repr=False)
    schema: Any = field(default=None, repr=False)
    artifacts: dict = field(default_factory=dict, repr=False)
    ledger_entry: dict | None = None
    audit_budget: dict | None = None

    @property
    def approved(self) -> bool:
        """Every applicable check passed (and at least one applied)."""
        applicable = [r for r in self.results.values() if r.applicable]
        return bool(applicable) and all(r.passed for r in applicable)

    def _failed(self, attr: str) -> list[str]:
        out = [getattr(r, attr) for r in self.results.values() if r.applicable and not r.passed]
        if not any(r.applicable for r in self.results.values()):
            out.append("no check applied to this release")
        return out

    @property
    def reasons(self) -> list[str]:
        """One reason per failed applicable check, in check order (may quote confidential numbers)."""
        return self._failed("reason")

    @property
    def public_reasons(self) -> list[str]:
        """One reason per failed applicable check without confidential numbers: which rule failed."""
        return self._failed("public_reason")

    @property
    def verdict(self) -> dict[str, Any]:
        """The verdict the ledger's public copy shows: from public checks and noisy threshold tests only.

        ``source`` is ``"public"`` when no check read confidential rows,
        ``"dp"`` when those that did published noisy verdicts, and
        ``"confidential"`` when any did not (``approved`` and
        ``public_reasons`` are then None). ``epsilon`` is what the noisy
        verdicts cost.
        """
        shown = [r.verdict for r in self.results.values()]
        sources = {v["source"] for v in shown}
        source = "confidential" if "confidential" in sources else ("dp" if "dp" in sources else "public")
        eps = float((self.audit_budget or {}).get("epsilon", 0.0))
        if source == "confidential":
            return {"source": source, "approved": None, "public_reasons": None, "epsilon": eps}
        applicable = [v for v in shown if v["applicable"]]
        reasons = [v["public_reason"] for v in applicable if not v["passed"]]
        if not applicable:
            reasons.append("no check applied to this release")
        return {"source": source, "approved": bool(applicable) and all(v["passed"] for v in applicable),
                "public_reasons": reasons, "epsilon": eps}

    def __repr__(self) -> str:
        verdict = "APPROVED" if self.approved else "REJECTED"
        return f"AuditReport({verdict}; " + ", ".join(
            f"{n}={'n/a' if not r.applicable else ('pass' if r.passed else 'FAIL')}" for n, r in self.results.items()
        ) + ")"

    # tables ------------------------------------------------------------------
    def to_frame(self) -> pd.DataFrame:
        """One row per check: applicable, passed, score, threshold, reason, elapsed_s."""
        rows = [{"check": n, "applicable": r.applicable, "passed": r.passed, "score": r.score,
                 "threshold": format_value(r.threshold), "reason": r.reason, "elapsed_s": r.elapsed_s}
                for n, r in self.results.items()]
        return pd.DataFrame(rows).set_index("check")

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form of everything but the data and the plot aggregates."""
        return jsonable({
            "audit_id": self.audit_id, "timestamp": self.timestamp, "approved": self.approved,
            "reasons": self.reasons, "public_reasons": self.public_reasons,
            "results": {n: r.to_dict() for n, r in self.results.items()},
            "synthesizer": self.synthesizer, "privacy": self.privacy, "seeds": self.seeds, "data": self.data,
            "library_versions": self.library_versions, "elapsed_s": self.elapsed_s, "checks": self.checks,
            "verdict": self.verdict, "audit_budget": self.audit_budget,
        })

    def confidential_fields(self) -> list[str]:
        """Dotted paths of :meth:`to_dict` fields computed from confidential data, or holding seeds.

        Which paths are listed depends on public facts only (which checks read
        confidential rows, whether the release size is a DP estimate, seeds),
        so the published copy has the same structure for neighbouring data.
        """
        paths = ["reasons", "elapsed_s", "seeds", "data.n_train", "data.n_holdout"]
        if any(r.uses_confidential_data for r in self.results.values()):
            paths += list(_EXACT_VERDICT)
        if self.data.get("release_size") != "dp_estimate":
            paths.append("data.n_synthetic")  # may be the exact private size
        for name, r in self.results.items():
            paths += [f"results.{name}.{p}" for p in r.confidential_paths()]
        paths += synthesizer_confidential(self.synthesizer)
        for name, c in self.checks.items():
            if isinstance(c, dict):
                paths += seed_paths(c.get("params") or {}, f"checks.{name}.params")
        return sorted(set(paths))

    def ledger_payload(self) -> tuple[dict[str, Any], list[str]]:
        """The ledger entry's payload and the dotted paths of its confidential fields."""
        payload = self.to_dict()
        payload["audit_timestamp"] = payload.pop("timestamp")
        return payload, self.confidential_fields()

    # rendering shortcuts ---------------------------------------------------------
    def display(self) -> AuditReportDisplay:
        """An :class:`AuditReportDisplay` of this report."""
        return AuditReportDisplay.from_report(self)

    def to_markdown(self) -> str:
        """Markdown summary (see :meth:`AuditReportDisplay.to_markdown`)."""
        return self.display().to_markdown()

    def to_html(self, path: str | Path | None = None, *, overwrite: bool = False) -> str:
        """Self-contained HTML (see :meth:`AuditReportDisplay.to_html`)."""
        return self.display().to_html(path, overwrite=overwrite)

    def figures(self, max_columns: int = 12) -> dict[str, Any]:
        """Matplotlib figures (see :meth:`AuditReportDisplay.plot`)."""
        return self.display().plot(max_columns=max_columns).figures_

    def save(self, path: str | Path, *, overwrite: bool = False) -> Path:
        """Write the report (see :meth:`AuditReportDisplay.save`); refuses to overwrite unless ``overwrite``."""
        return self.display().save(path, overwrite=overwrite)
