"""AuditReportDisplay: markdown, HTML and plots of an AuditReport (the scikit-learn Display pattern)."""

from __future__ import annotations

import base64
import html
import io
import json
from pathlib import Path
from typing import Any

import numpy as np

from skdpsynth.utils._optional import import_optional

__all__ = ["AuditReportDisplay", "CONFIDENTIAL_NOTE", "format_value"]

CONFIDENTIAL_NOTE = ("This report contains statistics of the confidential real data (membership-attack scores, "
                     "train-on-real performance, real marginals, subgroup recalls, the sizes of the real tables): "
                     "share it with the data custodian only. The synthetic data, the privacy spend and the public "
                     "reasons are releasable.")
_SINGLE = {".md": "markdown", ".html": "html", ".htm": "html", ".json": "json"}


def format_value(v: Any) -> str:
    """A number to 3 decimals (``nan`` kept), a dict as ``k=v`` pairs, anything else as text."""
    if isinstance(v, (float, np.floating)):
        return "nan" if not np.isfinite(v) else f"{v:.3f}"
    if isinstance(v, dict):
        return ", ".join(f"{k}={format_value(x)}" for k, x in v.items())
    return str(v)


def _pyplot():
    matplotlib = import_optional("matplotlib", "the audit report's figures (HTML, PNG)")

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


class AuditReportDisplay:
    """Render an :class:`AuditReport`: markdown, self-contained HTML, matplotlib figures, report files.

    Like scikit-learn's ``*Display`` classes, it holds what it draws from (the
    report's results and plot aggregates) and the figures it made
    (``figures_``, after :meth:`plot`); the report itself holds results only.

    Parameters
    ----------
    report : AuditReport

    Examples
    --------
    >>> disp = AuditReportDisplay.from_report(report).plot()   # doctest: +SKIP
    >>> disp.figures_["privacy_membership"]                     # doctest: +SKIP
    >>> disp.save("audit-2024-05/")                             # doctest: +SKIP
    """

    def __init__(self, report: Any):
        self.report = report

    @classmethod
    def from_report(cls, report: Any) -> AuditReportDisplay:
        """The display of ``report``."""
        return cls(report)

    # text --------------------------------------------------------------------------
    def to_markdown(self) -> str:
        """A markdown summary: verdict, reasons, check table, privacy guarantee, provenance."""
        rep = self.report
        verdict = "APPROVED" if rep.approved else "REJECTED"
        lines = [f"# PEARL release audit: **{verdict}**", ""]
        if rep.reasons:
            lines += ["Reasons:", ""] + [f"- {r}" for r in rep.reasons] + [""]
            lines += ["Public reasons (without confidential numbers):", ""]
            lines += [f"- {r}" for r in rep.public_reasons] + [""]
        lines += ["| check | applicable | passed | score | threshold | reason |", "|---|---|---|---|---|---|"]
        for n, r in rep.results.items():
            reason = r.reason.replace("|", "\\|")
            lines.append(f"| {n} | {'yes' if r.applicable else 'no'} | {'yes' if r.passed else '**no**'} | "
                         f"{format_value(r.score)} | {format_value(r.threshold)} | {reason} |")
        lines += ["", f"Published verdict: {self._published()}"]
        lines += ["", "## Release", "", *self._release_lines(), "", f"> {CONFIDENTIAL_NOTE}", ""]
        return "\n".join(lines)

    def _published(self) -> str:
        """What the ledger's public copy says about the verdict, and what that cost."""
        v = self.report.verdict
        if v["source"] == "confidential":
            return "confidential (the public copy of the ledger shows that a verdict exists, not what it is)"
        said = "APPROVED" if v["approved"] else "REJECTED"
        if v["source"] == "public":
            return f"{said} (every check read public inputs only)"
        return f"{said} (noisy threshold tests, epsilon = {format_value(v['epsilon'])}; may differ from the exact one)"

    def _release_lines(self) -> list[str]:
        rep = self.report
        syn = rep.synthesizer or {}
        priv = rep.privacy
        named = isinstance(priv, dict) and priv.get("synthesizer")
        if syn.get("class") is None and named:  # an audit of a file: the budget record names its synthesizer
            lines = [f"- synthesizer: `{named}` (from the budget record)"]
        else:
            lines = [f"- synthesizer: `{syn.get('class')}`"]
        if isinstance(priv, dict):
            eps = "none (NOT private)" if priv.get("epsilon") is None else format_value(priv.get("epsilon"))
            lines.append(f"- privacy guarantee: epsilon = {eps}, delta = {priv.get('delta')}; "
                         f"{'publishable' if priv.get('publishable') else 'NOT publishable'} "
                         f"(source: {priv.get('source')})")
            for why in priv.get("nonprivate_reasons") or []:
                lines.append(f"- WARNING: computed without DP: {why}")
        else:
            lines.append("- privacy guarantee: none stated")
        if syn.get("schema_public") is False:
            lines.append("- WARNING: the schema was read from the private data without DP (not end-to-end DP)")
        d = rep.data
        size = "the synthesizer's DP estimate" if d.get("release_size") == "dp_estimate" else "chosen by the caller"
        lines.append(f"- rows: {d.get('n_synthetic')} synthetic ({d.get('synthetic_source')}; size {size}), "
                     f"{d.get('n_train')} train, {d.get('n_holdout')} holdout")
        lines.append(f"- synthetic SHA-256: `{d.get('synthetic_sha256', '')[:16]}...`")
        lines.append(f"- seeds: {rep.seeds}")
        lines.append(f"- audit {rep.audit_id} at {rep.timestamp}, {rep.elapsed_s:.1f} s")
        if rep.ledger_entry:
            lines.append(f"- ledger: `{rep.ledger_entry['path']}` entry {rep.ledger_entry['seq']} "
                         f"(hash `{rep.ledger_entry['hash'][:16]}...`)")
        return lines

    # figures -----------------------------------------------------------------------
    def _plan(self, max_columns: int = 12) -> dict[str, Any]:
        """Figure name -> a function drawing it, for the figures that apply."""
        plan: dict[str, Any] = {}
        marginals = self.report.artifacts.get("marginals") or {}
        if marginals:
            shown = dict(list(marginals.items())[:max_columns])
            plan["marginals"] = lambda plt: _marginals_figure(plt, shown)
        for name, r in self.report.results.items():
            a = r.artifacts
            for key, suffix, draw in (("membership_hist", "membership", _membership_figure),
                                      ("per_class_tstr", "tstr", _tstr_figure), ("bars", "models", _bars_figure),
                                      ("recalls", "subgroups", _recalls_figure)):
                if key in a:
                    plan[f"{name}_{suffix}"] = lambda plt, n=name, a=a, draw=draw: draw(plt, n, a)
        return plan

    def plot(self, *, max_columns: int = 12) -> AuditReportDisplay:
        """Draw the figures that apply (marginals, membership distances, TSTR vs TRTR, models, subgroups).

        Sets ``figures_`` (name -> matplotlib Figure) and returns ``self``.
        """
        plt = _pyplot()
        self.figures_ = {name: draw(plt) for name, draw in self._plan(max_columns).items()}
        return self

    def close(self) -> None:
        """Close the figures made by :meth:`plot`."""
        plt = _pyplot()
        for fig in getattr(self, "figures_", {}).values():
            plt.close(fig)
        self.figures_ = {}

    def _png(self, fig: Any) -> bytes:
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=90)
        return buf.getvalue()

    def to_html(self, path: str | Path | None = None, *, overwrite: bool = False) -> str:
        """A self-contained HTML report (plots embedded as PNG); written to ``path`` when given.

        Refuses to replace an existing ``path`` unless ``overwrite``.
        """
        if path is not None:
            _refuse_existing([Path(path)], overwrite)
        figs = getattr(self, "figures_", None)
        if figs is not None:
            pngs = {name: self._png(fig) for name, fig in figs.items()}
        else:
            pngs = self._render_pngs()
        text = self._html(pngs)
        if path is not None:
            Path(path).write_text(text, encoding="utf-8")
        return text

    def _render_pngs(self) -> dict[str, bytes]:
        """Each figure drawn, encoded as PNG and closed (memory stays bounded)."""
        plt = _pyplot()
        out = {}
        for name, draw in self._plan().items():
            fig = draw(plt)
            out[name] = self._png(fig)
            plt.close(fig)
        return out

    def _html(self, pngs: dict[str, bytes]) -> str:
        rep = self.report
        verdict = "APPROVED" if rep.approved else "REJECTED"
        color = "#1a7f37" if rep.approved else "#cf222e"
        parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>PEARL audit: {verdict}</title>",
                 "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto}td,th{border:1px solid #ccc;"
                 "padding:4px 8px;vertical-align:top}table{border-collapse:collapse}.note{background:#fff8c5;"
                 "padding:8px}</style></head><body>",
                 f"<h1>PEARL release audit: <span style='color:{color}'>{verdict}</span></h1>"]
        if rep.reasons:
            parts.append("<ul>" + "".join(f"<li>{html.escape(r)}</li>" for r in rep.reasons) + "</ul>")
        parts.append("<table><tr><th>check</th><th>applicable</th><th>passed</th><th>score</th><th>threshold</th>"
                     "<th>reason</th></tr>")
        for n, r in rep.results.items():
            parts.append(f"<tr><td>{html.escape(n)}</td><td>{'yes' if r.applicable else 'no'}</td>"
                         f"<td>{'yes' if r.passed else '<b>no</b>'}</td><td>{format_value(r.score)}</td>"
                         f"<td>{html.escape(format_value(r.threshold))}</td><td>{html.escape(r.reason)}</td></tr>")
        parts.append("</table>")
        parts.append(f"<p>Published verdict: {html.escape(self._published())}</p>")
        parts.append("<h2>Release</h2><pre>" + html.escape("\n".join(self._release_lines())) + "</pre>")
        for name, png in pngs.items():
            parts.append(f"<h3>{html.escape(name)}</h3><img src='data:image/png;base64,"
                         f"{base64.b64encode(png).decode()}'/>")
        parts.append(f"<p class='note'>{html.escape(CONFIDENTIAL_NOTE)}</p></body></html>")
        return "\n".join(parts)

    # files -------------------------------------------------------------------------
    def save(self, path: str | Path, *, overwrite: bool = False) -> Path:
        """Write the report: one file (``.md``, ``.html``, ``.json``) or a folder of all of them plus PNGs.

        A folder gets ``report.md``, ``report.html``, ``report.json`` and one
        PNG per figure. Nothing is overwritten unless ``overwrite=True``: an
        existing file, or a folder already holding any of these files, raises
        :class:`FileExistsError` before anything is written. With
        ``overwrite=True`` the files of the previous report in the folder
        (listed in its ``report.json``) are replaced or removed.

        Returns
        -------
        pathlib.Path
        """
        path = Path(path)
        kind = _SINGLE.get(path.suffix.lower())
        if kind is not None:
            return self._save_file(path, kind, overwrite)
        if path.exists() and not path.is_dir():
            raise FileExistsError(f"{path} is an existing file, not a folder; give a folder or a .md / .html / "
                                  ".json file name.")
        plan = self._plan()
        names = ["report.md", "report.html", "report.json"] + [f"{n}.png" for n in plan]
        _refuse_existing([path / n for n in names], overwrite)  # before anything is drawn or written
        stale = _previous_files(path) if overwrite else []
        pngs = self._render_pngs()
        path.mkdir(parents=True, exist_ok=True)
        for old in stale:
            if old not in names and (path / old).is_file():
                (path / old).unlink()
        md = self.to_markdown()
        if pngs:
            md += "\n## Plots\n\n" + "\n".join(f"![{n}]({n}.png)" for n in pngs) + "\n"
        for name, png in pngs.items():
            (path / f"{name}.png").write_bytes(png)
        (path / "report.md").write_text(md, encoding="utf-8")
        (path / "report.json").write_text(json.dumps({**self.report.to_dict(), "files": names}, indent=2),
                                          encoding="utf-8")
        (path / "report.html").write_text(self._html(pngs), encoding="utf-8")
        return path

    def _save_file(self, path: Path, kind: str, overwrite: bool) -> Path:
        _refuse_existing([path], overwrite)
        path.parent.mkdir(parents=True, exist_ok=True)
        if kind == "html":
            path.write_text(self._html(self._render_pngs()), encoding="utf-8")
        elif kind == "json":
            path.write_text(json.dumps(self.report.to_dict(), indent=2), encoding="utf-8")
        else:
            path.write_text(self.to_markdown(), encoding="utf-8")
        return path


def _refuse_existing(paths: list[Path], overwrite: bool) -> None:
    existing = [p for p in paths if p.exists()]
    if existing and not overwrite:
        shown = ", ".join(str(p) for p in existing[:5]) + (" ..." if len(existing) > 5 else "")
        raise FileExistsError(f"refusing to overwrite {shown}; pass overwrite=True to replace the report, or choose "
                              "another path.")


def _previous_files(folder: Path) -> list[str]:
    try:
        files = json.loads((folder / "report.json").read_text(encoding="utf-8")).get("files", [])
    except (OSError, ValueError, AttributeError):
        return []
    return [f for f in files if isinstance(f, str) and "/" not in f and "\\" not in f and not f.startswith(".")]


# --------------------------------------------------------------------------- figures
def _marginals_figure(plt: Any, marginals: dict[str, dict]) -> Any:
    ncol = min(4, len(marginals))
    nrow = int(np.ceil(len(marginals) / ncol))
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.2 * ncol, 2.4 * nrow), squeeze=False)
    for ax, (col, m) in zip(axes.ravel(), marginals.items()):
        if m["kind"] == "numeric":
            edges = np.asarray(m["edges"])
            width = np.diff(edges)
            ax.bar(edges[:-1], m["real"], width, align="edge", alpha=0.55, label="real")
            ax.bar(edges[:-1], m["synthetic"], width, align="edge", alpha=0.55, label="synthetic")
        else:
            x = np.arange(len(m["labels"]))
            ax.bar(x - 0.2, m["real"], 0.4, label="real")
            ax.bar(x + 0.2, m["synthetic"], 0.4, label="synthetic")
            ax.set_xticks(x, [str(c)[:8] for c in m["labels"]], rotation=60, fontsize=6)
        ax.set_title(str(col)[:30], fontsize=8)
        ax.tick_params(labelsize=6)
    for ax in axes.ravel()[len(marginals):]:
        ax.axis("off")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle("Marginals: real holdout vs synthetic")
    fig.tight_layout()
    return fig


def _membership_figure(plt: Any, name: str, a: dict) -> Any:
    h = a["membership_hist"]
    edges = np.asarray(h["edges"])
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.stairs(h["nonmembers"], edges, fill=True, alpha=0.6, label="non-members (holdout)")
    ax.stairs(h["members"], edges, fill=True, alpha=0.6, label="members (train)")
    ax.set_xlabel("Gower distance to the closest synthetic row")
    ax.set_title(f"{name}: membership AUC {a.get('membership_auc', float('nan')):.3f}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def _tstr_figure(plt: Any, name: str, a: dict) -> Any:
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
    return fig


def _bars_figure(plt: Any, name: str, a: dict) -> Any:
    fig, ax = plt.subplots(figsize=(4.5, 3.2))
    models = list(a["bars"])
    x = np.arange(len(models))
    ax.bar(x - 0.2, [a["bars"][m][1] for m in models], 0.4, label="trained on real")
    ax.bar(x + 0.2, [a["bars"][m][0] for m in models], 0.4, label="trained on synthetic")
    ax.axhline(a.get("majority_floor", 0), color="k", ls="--", lw=1, label="floor")
    ax.set_xticks(x, models)
    ax.set_ylabel(a.get("ylabel", "macro-F1 on real learners"))
    ax.set_title(name)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _recalls_figure(plt: Any, name: str, a: dict) -> Any:
    attrs = list(a["recalls"])
    fig, axes = plt.subplots(1, len(attrs), figsize=(3.5 * len(attrs), 3.2), squeeze=False)
    for ax, attr in zip(axes.ravel(), attrs):
        groups = list(a["recalls"][attr])
        x = np.arange(len(groups))
        ax.bar(x - 0.2, [a["real_recalls"][attr].get(g, np.nan) for g in groups], 0.4, label="trained on real")
        ax.bar(x + 0.2, [a["recalls"][attr][g] for g in groups], 0.4, label="trained on synthetic")
        ax.set_xticks(x, groups, fontsize=8)
        ax.set_title(str(attr), fontsize=9)
        ax.set_ylim(0, 1)
    axes[0, 0].set_ylabel("recall within group")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(f"{name}: subgroup recalls")
    fig.tight_layout()
    return fig
