"""AuditReport: the verdict, one reason per failed check, tables, markdown / HTML with plots."""

from __future__ import annotations

import base64
import html
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from skdpsynth.audit._base import CheckResult, jsonable

__all__ = ["AuditReport"]

CONFIDENTIAL_NOTE = ("This report contains statistics of the confidential real data (membership-attack scores, "
                     "train-on-real performance, real marginals, subgroup recalls): share it with the data custodian "
                     "only. The synthetic data and the privacy spend are releasable.")


def _fmt(v: Any) -> str:
    if isinstance(v, (float, np.floating)):
        return "nan" if not np.isfinite(v) else f"{v:.3f}"
    if isinstance(v, dict):
        return ", ".join(f"{k}={_fmt(x)}" for k, x in v.items())
    return str(v)


@dataclass
class AuditReport:
    """The outcome of :meth:`ReleaseAuditor.audit`.

    Attributes
    ----------
    results : dict of str to CheckResult
        In check order.
    approved : bool
        True only when every applicable check passed.
    reasons : list of str
        One readable reason per failed applicable check.
    synthesizer : dict
        Class, params, seed, privacy spend and budget log (empty class when a
        table was audited without its synthesizer).
    seeds, data, library_versions, timestamp, audit_id, elapsed_s, checks
        Provenance recorded in the ledger.
    synthetic : DataFrame
        The audited release (kept for plots).
    """

    results: dict[str, CheckResult]
    synthesizer: dict = field(default_factory=dict)
    seeds: dict = field(default_factory=dict)
    data: dict = field(default_factory=dict)
    library_versions: dict = field(default_factory=dict)
    timestamp: str = ""
    audit_id: str = ""
    elapsed_s: float = 0.0
    checks: dict = field(default_factory=dict)
    synthetic: pd.DataFrame | None = field(default=None, repr=False)
    holdout: pd.DataFrame | None = field(default=None, repr=False)
    schema: Any = field(default=None, repr=False)
    ledger_entry: dict | None = None

    @property
    def approved(self) -> bool:
        """Every applicable check passed (and at least one applied)."""
        applicable = [r for r in self.results.values() if r.applicable]
        return bool(applicable) and all(r.passed for r in applicable)

    @property
    def reasons(self) -> list[str]:
        """One reason per failed applicable check, in check order."""
        out = [r.reason for r in self.results.values() if r.applicable and not r.passed]
        if not any(r.applicable for r in self.results.values()):
            out.append("no check applied to this release")
        return out

    def __repr__(self) -> str:
        verdict = "APPROVED" if self.approved else "REJECTED"
        return f"AuditReport({verdict}; " + ", ".join(
            f"{n}={'n/a' if not r.applicable else ('pass' if r.passed else 'FAIL')}" for n, r in self.results.items()
        ) + ")"

    # tables ------------------------------------------------------------------
    def to_frame(self) -> pd.DataFrame:
        """One row per check: applicable, passed, score, threshold, reason, elapsed_s."""
        rows = [{"check": n, "applicable": r.applicable, "passed": r.passed, "score": r.score,
                 "threshold": _fmt(r.threshold), "reason": r.reason, "elapsed_s": r.elapsed_s}
                for n, r in self.results.items()]
        return pd.DataFrame(rows).set_index("check")

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form of everything but the data."""
        return jsonable({
            "audit_id": self.audit_id, "timestamp": self.timestamp, "approved": self.approved,
            "reasons": self.reasons, "results": {n: r.to_dict() for n, r in self.results.items()},
            "synthesizer": self.synthesizer, "seeds": self.seeds, "data": self.data,
            "library_versions": self.library_versions, "elapsed_s": self.elapsed_s, "checks": self.checks,
        })

    def ledger_payload(self) -> tuple[dict[str, Any], list[str]]:
        """The ledger entry's payload and the dotted paths of its confidential fields."""
        payload = self.to_dict()
        payload["audit_timestamp"] = payload.pop("timestamp")
        confidential = [f"results.{n}.details.{k}" for n, r in self.results.items() for k in r.confidential]
        confidential += [f"results.{n}.reason" for n, r in self.results.items() if r.confidential]
        confidential += ["data.n_train", "data.n_holdout"]
        return payload, sorted(confidential)

    # rendering -----------------------------------------------------------------
    def to_markdown(self) -> str:
        """A markdown summary: verdict, reasons, check table, privacy spend, provenance."""
        verdict = "APPROVED" if self.approved else "REJECTED"
        lines = [f"# PEARL release audit: **{verdict}**", ""]
        if self.reasons:
            lines += ["Reasons:", ""] + [f"- {r}" for r in self.reasons] + [""]
        lines += ["| check | applicable | passed | score | threshold | reason |", "|---|---|---|---|---|---|"]
        for n, r in self.results.items():
            reason = r.reason.replace("|", "\\|")
            lines.append(f"| {n} | {'yes' if r.applicable else 'no'} | {'yes' if r.passed else '**no**'} | "
                         f"{_fmt(r.score)} | {_fmt(r.threshold)} | {reason} |")
        syn = self.synthesizer or {}
        lines += ["", "## Release", ""]
        lines.append(f"- synthesizer: `{syn.get('class')}`")
        spent = syn.get("privacy_spent")
        if isinstance(spent, dict):
            lines.append(f"- privacy spent: epsilon = {_fmt(spent.get('epsilon'))}, delta = {spent.get('delta')} "
                         f"({spent.get('neighbouring', '')}; {spent.get('composition', '')} composition across "
                         "cohorts)")
        elif spent is not None:
            lines.append(f"- privacy spent: {spent}")
        if syn.get("schema_public") is False:
            lines.append("- WARNING: the schema was read from the private data without DP (not end-to-end DP)")
        lines.append(f"- rows: {self.data.get('n_synthetic')} synthetic ({self.data.get('synthetic_source')}), "
                     f"{self.data.get('n_train')} train, {self.data.get('n_holdout')} holdout")
        lines.append(f"- synthetic SHA-256: `{self.data.get('synthetic_sha256', '')[:16]}...`")
        lines.append(f"- seeds: {self.seeds}")
        lines.append(f"- audit {self.audit_id} at {self.timestamp}, {self.elapsed_s:.1f} s")
        if self.ledger_entry:
            lines.append(f"- ledger: `{self.ledger_entry['path']}` entry {self.ledger_entry['seq']} "
                         f"(hash `{self.ledger_entry['hash'][:16]}...`)")
        lines += ["", f"> {CONFIDENTIAL_NOTE}", ""]
        return "\n".join(lines)

    def figures(self, max_columns: int = 12) -> dict[str, Any]:
        """Matplotlib figures: marginals, membership scores, TSTR vs TRTR, subgroup recalls (those that apply)."""
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt

        figs: dict[str, Any] = {}
        if self.synthetic is not None and self.holdout is not None:
            cols = [c for c in self.holdout.columns if c in self.synthetic.columns][:max_columns]
            if cols:
                ncol = min(4, len(cols))
                nrow = int(np.ceil(len(cols) / ncol))
                fig, axes = plt.subplots(nrow, ncol, figsize=(3.2 * ncol, 2.4 * nrow), squeeze=False)
                for ax, c in zip(axes.ravel(), cols):
                    kind = self.schema[c].kind if self.schema is not None and c in self.schema else None
                    _marginal(ax, self.holdout[c], self.synthetic[c], str(c), kind)
                for ax in axes.ravel()[len(cols):]:
                    ax.axis("off")
                axes[0, 0].legend(fontsize=7)
                fig.suptitle("Marginals: real holdout vs synthetic")
                fig.tight_layout()
                figs["marginals"] = fig
        for name, r in self.results.items():
            a = r.artifacts
            if "member_distances" in a:
                fig, ax = plt.subplots(figsize=(5, 3.2))
                dm, dh = a["member_distances"], a["nonmember_distances"]
                hi = float(max(np.max(dm), np.max(dh), 1e-9))
                bins = np.linspace(0, hi, 40)
                ax.hist(dh, bins=bins, alpha=0.6, label="non-members (holdout)", density=True)
                ax.hist(dm, bins=bins, alpha=0.6, label="members (train)", density=True)
                ax.set_xlabel("Gower distance to the closest synthetic row")
                ax.set_title(f"{name}: membership AUC {r.details.get('membership_auc', float('nan')):.3f}")
                ax.legend(fontsize=8)
                fig.tight_layout()
                figs[f"{name}_membership"] = fig
            if "per_class_tstr" in a:
                fig, ax = plt.subplots(figsize=(5.5, 3.2))
                classes = list(a["per_class_tstr"])
                x = np.arange(len(classes) + 1)
                tstr = [a["per_class_tstr"][c] for c in classes] + [a["tstr_f1"]]
                trtr = [a["per_class_trtr"].get(c, np.nan) for c in classes] + [a["trtr_f1"]]
                ax.bar(x - 0.2, trtr, 0.4, label="TRTR (train real)")
                ax.bar(x + 0.2, tstr, 0.4, label="TSTR (train synthetic)")
                ax.axhline(a["majority_floor"], color="k", ls="--", lw=1, label="no-skill floor")
                ax.set_xticks(x, [str(c) for c in classes] + ["macro"], rotation=30, fontsize=8)
                ax.set_ylabel("F1 on real holdout")
                ax.set_title(f"{name}: TSTR vs TRTR")
                ax.legend(fontsize=7)
                fig.tight_layout()
                figs[f"{name}_tstr"] = fig
            if "bars" in a:
                fig, ax = plt.subplots(figsize=(4.5, 3.2))
                models = list(a["bars"])
                x = np.arange(len(models))
                ax.bar(x - 0.2, [a["bars"][m][1] for m in models], 0.4, label="trained on real")
                ax.bar(x + 0.2, [a["bars"][m][0] for m in models], 0.4, label="trained on synthetic")
                ax.axhline(a.get("majority_floor", 0), color="k", ls="--", lw=1, label="floor")
                ax.set_xticks(x, models)
                ax.set_ylabel("macro-F1 on real learners")
                ax.set_title(name)
                ax.legend(fontsize=7)
                fig.tight_layout()
                figs[f"{name}_models"] = fig
            if "recalls" in a:
                attrs = list(a["recalls"])
                fig, axes = plt.subplots(1, len(attrs), figsize=(3.5 * len(attrs), 3.2), squeeze=False)
                for ax, attr in zip(axes.ravel(), attrs):
                    groups = list(a["recalls"][attr])
                    x = np.arange(len(groups))
                    ax.bar(x - 0.2, [a["real_recalls"][attr].get(g, np.nan) for g in groups], 0.4,
                           label="trained on real")
                    ax.bar(x + 0.2, [a["recalls"][attr][g] for g in groups], 0.4, label="trained on synthetic")
                    ax.set_xticks(x, groups, fontsize=8)
                    ax.set_title(str(attr), fontsize=9)
                    ax.set_ylim(0, 1)
                axes[0, 0].set_ylabel("recall within group")
                axes[0, 0].legend(fontsize=7)
                fig.suptitle(f"{name}: subgroup recalls")
                fig.tight_layout()
                figs[f"{name}_subgroups"] = fig
        return figs

    def to_html(self, path: str | Path | None = None) -> str:
        """A self-contained HTML report (plots embedded as PNG); written to ``path`` when given."""
        import matplotlib.pyplot as plt

        verdict = "APPROVED" if self.approved else "REJECTED"
        color = "#1a7f37" if self.approved else "#cf222e"
        parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>PEARL audit: {verdict}</title>",
                 "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto}td,th{border:1px solid #ccc;"
                 "padding:4px 8px;vertical-align:top}table{border-collapse:collapse}.note{background:#fff8c5;"
                 "padding:8px}</style></head><body>",
                 f"<h1>PEARL release audit: <span style='color:{color}'>{verdict}</span></h1>"]
        if self.reasons:
            parts.append("<ul>" + "".join(f"<li>{html.escape(r)}</li>" for r in self.reasons) + "</ul>")
        parts.append("<table><tr><th>check</th><th>applicable</th><th>passed</th><th>score</th><th>threshold</th>"
                     "<th>reason</th></tr>")
        for n, r in self.results.items():
            parts.append(f"<tr><td>{html.escape(n)}</td><td>{'yes' if r.applicable else 'no'}</td>"
                         f"<td>{'yes' if r.passed else '<b>no</b>'}</td><td>{_fmt(r.score)}</td>"
                         f"<td>{html.escape(_fmt(r.threshold))}</td><td>{html.escape(r.reason)}</td></tr>")
        parts.append("</table>")
        md = self.to_markdown().split("## Release", 1)[1].split(">")[0]
        parts.append("<h2>Release</h2><pre>" + html.escape(md.strip()) + "</pre>")
        for name, fig in self.figures().items():
            buf = io.BytesIO()
            fig.savefig(buf, format="png", dpi=90)
            plt.close(fig)
            parts.append(f"<h3>{html.escape(name)}</h3><img src='data:image/png;base64,"
                         f"{base64.b64encode(buf.getvalue()).decode()}'/>")
        parts.append(f"<p class='note'>{html.escape(CONFIDENTIAL_NOTE)}</p></body></html>")
        text = "\n".join(parts)
        if path is not None:
            Path(path).write_text(text, encoding="utf-8")
        return text

    def save(self, folder: str | Path) -> Path:
        """Write ``report.md``, ``report.html``, ``report.json`` and one PNG per figure into ``folder``."""
        import matplotlib.pyplot as plt

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        md = self.to_markdown()
        figs = self.figures()
        if figs:
            md += "\n## Plots\n\n" + "\n".join(f"![{n}]({n}.png)" for n in figs) + "\n"
        for name, fig in figs.items():
            fig.savefig(folder / f"{name}.png", dpi=90)
            plt.close(fig)
        (folder / "report.md").write_text(md, encoding="utf-8")
        (folder / "report.json").write_text(json.dumps(self.to_dict(), indent=2), encoding="utf-8")
        self.to_html(folder / "report.html")
        return folder


def _marginal(ax: Any, real: pd.Series, syn: pd.Series, title: str, kind: str | None = None) -> None:
    r_num = pd.to_numeric(real, errors="coerce")
    s_num = pd.to_numeric(syn, errors="coerce")
    if kind is not None:
        numeric = kind in ("continuous", "integer") and real.nunique() > 12
    else:
        numeric = r_num.notna().mean() > 0.95 and real.nunique() > 12
    if numeric:
        lo, hi = np.nanmin(r_num), np.nanmax(r_num)
        bins = np.linspace(lo, hi if hi > lo else lo + 1, 25)
        ax.hist(r_num.dropna().clip(lo, hi), bins=bins, alpha=0.55, density=True, label="real")
        ax.hist(s_num.dropna().clip(lo, hi), bins=bins, alpha=0.55, density=True, label="synthetic")
    else:
        rc = real.astype(str).value_counts(normalize=True)
        sc = syn.astype(str).value_counts(normalize=True)
        cats = list(rc.index[:12])
        x = np.arange(len(cats))
        ax.bar(x - 0.2, [rc.get(c, 0) for c in cats], 0.4, label="real")
        ax.bar(x + 0.2, [sc.get(c, 0) for c in cats], 0.4, label="synthetic")
        ax.set_xticks(x, [c[:8] for c in cats], rotation=60, fontsize=6)
    ax.set_title(title[:30], fontsize=8)
    ax.tick_params(labelsize=6)
