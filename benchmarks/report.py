"""Write the published figures from the result files: README.md's Measured table and the figure spans of docs/.

    python -m benchmarks.report            # rewrite README.md and docs/*.md from benchmarks/results/
    python -m benchmarks.report --check    # print the differences, exit 1 if any (nothing written)
    python -m benchmarks.report --stale    # the published result files that are stale or unstamped, and the
                                           # command that regenerates each
    python -m benchmarks.report --impact skdpsynth/privacy/_domain.py   # the published result files a change
                                           # to these files' code would make stale, with their commands

The figures are listed in ``benchmarks/published.py``. README.md's table lies between the lines
``<!-- measured:start -->`` and ``<!-- measured:end -->``; in docs/*.md a figure is written
``<!-- fig:KEY -->TEXT<!-- /fig -->`` (HTML comments: invisible on GitHub and in the Sphinx site) and TEXT is
replaced. A result file is fresh when each file of its stamp's ``depends`` still has the stamped sha256, or when
the file as it was (read back from git at the stamp's commit, and checked against that sha256) differs from
today's only in comments and docstrings: text that no result can depend on.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import hashlib
import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: python benchmarks/report.py
    sys.path.insert(0, str(ROOT))

from benchmarks._common import sha256  # noqa: E402  (a package: opacus installs another "benchmarks")
from benchmarks.published import FIGURES, MEASURED, RERUN, STALE_ALLOWED, published_files  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
README = ROOT / "README.md"
DOCS = ROOT / "docs"
START, END = "<!-- measured:start -->", "<!-- measured:end -->"
#: a figure span (one written inside inline code, `<!-- fig:...`, is prose about the convention, not a span)
SPAN = re.compile(r"(?<!`)<!-- fig:(?P<key>[\w.+-]+) -->(?P<text>.*?)<!-- /fig -->", re.S)
PLACEHOLDER = re.compile(r"\{(?P<key>[\w.+-]+)\}")


def load(source: str, results: Path = RESULTS) -> dict[str, Any]:
    """The JSON payload of a result file (``source`` relative to ``results``)."""
    return json.loads((results / source).read_text())


def figure_texts(results: Path = RESULTS) -> dict[str, str]:
    """Every registered figure's text, read from the result files in ``results``."""
    payloads: dict[str, dict[str, Any]] = {}
    texts = {}
    for fig in FIGURES:
        if fig.source not in payloads:
            payloads[fig.source] = load(fig.source, results)
        try:
            texts[fig.key] = fig.render(payloads[fig.source])
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise RuntimeError(f"figure {fig.key!r} cannot be read from {fig.source}: {exc!r}") from exc
    return texts


def _fill(template: str, texts: dict[str, str]) -> str:
    def sub(m: re.Match[str]) -> str:
        if m["key"] not in texts:
            raise KeyError(f"unknown figure {m['key']!r} in README's Measured table")
        return texts[m["key"]]
    return PLACEHOLDER.sub(sub, template)


def measured_table(texts: dict[str, str]) -> str:
    """README.md's Measured table (the lines between the markers)."""
    sources = {f.key: f.source for f in FIGURES}
    lines = ["| what | figure | result file |", "| --- | --- | --- |"]
    for what, template in MEASURED:
        files = sorted({sources[k] for k in PLACEHOLDER.findall(template)})
        cited = ", ".join(f"`{Path(f).stem}`" for f in files)
        lines.append(f"| {what} | {_fill(template, texts)} | {cited} |")
    return "\n".join(lines)


def update_readme(text: str, texts: dict[str, str]) -> str:
    """README.md with its Measured table rewritten."""
    start, end = text.find(START), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"README.md has no {START} ... {END} section")
    head = text[: start + len(START)]
    return head + "\n" + measured_table(texts) + "\n" + text[end:]


def update_spans(text: str, texts: dict[str, str], name: str = "") -> str:
    """A Markdown text with every ``<!-- fig:KEY -->...<!-- /fig -->`` span rewritten."""
    def sub(m: re.Match[str]) -> str:
        if m["key"] not in texts:
            raise KeyError(f"{name}: unknown figure {m['key']!r} (not in benchmarks/published.py)")
        return f"<!-- fig:{m['key']} -->{texts[m['key']]}<!-- /fig -->"
    return SPAN.sub(sub, text)


#: A past measurement kept for its reasoning (a before -> after of a design change): not regenerated, so its
#: visible text must name the commit it was measured at.
HISTORY = re.compile(r"<!-- history:(?P<commit>[0-9a-f]{7,40}) -->(?P<text>.*?)<!-- /history -->", re.S)
#: What a measured figure looks like in prose: a number with two or more decimals, or a time, size or ratio.
FIGURE_LIKE = re.compile(r"(?<![\w.`-])\d[\d,]*\.\d{2,}(?!\w|\.\d)"
                         r"|(?<![\w.`-])\d[\d,]*(?:\.\d+)? ?(?:ms|s|MiB|GiB|GB|MB|x|×)(?![\w/])")
_NOT_PROSE = re.compile(r"```.*?```|`[^`\n]*`|<!-- measured:start -->.*?<!-- measured:end -->|\]\([^)]*\)", re.S)


def unregistered_figures(text: str) -> list[str]:
    """Figure-like numbers of a Markdown text outside figure spans, history spans, code and link targets.

    Also reports history spans whose visible text does not name their commit. Parameters and thresholds are
    written as code (``alpha=0.01``) or with fewer than two decimals, so what is left is a measurement that the
    registry does not write.

    Parameters
    ----------
    text : str
        A Markdown document (README.md or a page of docs/).

    Returns
    -------
    list of str
        One line per finding: the number and the start of its line, or the history span that names no commit;
        empty when every measured number is generated or marked as history.
    """
    found = [f"history:{m['commit']} does not name its commit in its text" for m in HISTORY.finditer(text)
             if m["commit"][:7] not in m["text"]]
    prose = _NOT_PROSE.sub(" ", HISTORY.sub(" ", SPAN.sub(" ", text)))
    for line in prose.splitlines():
        found += [f"{m.group(0)!r} in: {line.strip()[:100]}" for m in FIGURE_LIKE.finditer(line)]
    return found


def documents(root: Path = ROOT) -> list[Path]:
    """The Markdown files whose figures are generated: README.md and docs/*.md."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def regenerate(root: Path = ROOT, results: Path = RESULTS) -> dict[Path, tuple[str, str]]:
    """``{path: (current text, generated text)}`` for every document."""
    texts = figure_texts(results)
    out = {}
    for path in documents(root):
        old = path.read_text()
        new = update_spans(old, texts, path.name)
        if path.name == "README.md" and path.parent == root:
            new = update_readme(new, texts)
        out[path] = (old, new)
    return out


@dataclass
class Freshness:
    """Whether a published result file was written by the code as it is now."""

    source: str
    state: str  # "fresh", "stale" or "unstamped" ("depends on" in an impact listing)
    changed: list[str] = field(default_factory=list)
    command: str = ""

    def describe(self) -> str:
        """One paragraph: the file, its state, what changed and the command that regenerates it."""
        head = f"benchmarks/results/{self.source}: {self.state}"
        if self.changed:
            shown = ", ".join(self.changed[:8]) + (f" and {len(self.changed) - 8} more" if len(self.changed) > 8
                                                   else "")
            head += f" ({shown})" if self.state == "depends on" else f" (changed since it was written: {shown})"
        return head + f"\n    rerun: {self.command or '(unknown: see the file report)'}"


def _code(source: bytes) -> str | None:
    """A module's code with its docstrings removed (``ast.dump``, so comments and layout are gone too)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                node.body = node.body[1:] or [ast.Pass()]
    return ast.dump(tree)


def _same_code(rel: str, digest: str, commit: str | None, root: Path) -> bool:
    """Whether ``rel`` as the stamp hashed it differs from the file now in comments and docstrings only.

    The stamped version is read back from git at the stamp's ``commit`` and used only when its sha256 is the
    stamped one (a result written on uncommitted code, or a checkout without that commit, stays stale).
    """
    if not commit or not rel.endswith(".py"):
        return False
    try:
        out = subprocess.run(["git", "show", f"{commit}:{rel}"], cwd=root, capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    if out.returncode != 0 or hashlib.sha256(out.stdout).hexdigest() != digest:
        return False
    then = _code(out.stdout)
    return then is not None and then == _code((root / rel).read_bytes())


def freshness(source: str, root: Path = ROOT, results: Path = RESULTS) -> Freshness:
    """Compare a result file's stamped ``depends`` hashes with the files under ``root`` now."""
    payload = load(source, results)
    stamp = payload.get("stamp")
    if not isinstance(stamp, dict) or not isinstance(stamp.get("depends"), dict) or not stamp["depends"]:
        return Freshness(source, "unstamped", command=RERUN.get(source, ""))
    changed = []
    for rel, digest in stamp["depends"].items():
        path = root / rel
        if not path.is_file():
            changed.append(f"{rel} (removed)")
        elif sha256(path) != digest and not _same_code(rel, digest, stamp.get("commit"), root):
            changed.append(rel)
    command = stamp.get("command") or RERUN.get(source, "")
    return Freshness(source, "stale" if changed else "fresh", changed, command)


def impact(files: list[str], root: Path = ROOT, results: Path = RESULTS) -> list[Freshness]:
    """The published result files whose stamp depends on any of ``files`` (repository-relative paths)."""
    wanted = {Path(f).as_posix().lstrip("./") for f in files}
    out = []
    for source in published_files():
        stamp = load(source, results).get("stamp") or {}
        hit = sorted(wanted & set(stamp.get("depends") or {}))
        if hit:
            out.append(Freshness(source, "depends on", hit, stamp.get("command") or RERUN.get(source, "")))
    return out


def main(argv: list[str] | None = None) -> int:
    """The command line; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="print the differences, exit 1 if any")
    mode.add_argument("--stale", action="store_true",
                      help="list the stale or unstamped published files with their commands")
    mode.add_argument("--impact", nargs="+", metavar="FILE",
                      help="list the published result files a code change to FILE would make stale")
    args = parser.parse_args(argv)
    if args.impact:
        hits = impact(args.impact)
        for st in hits:
            print(st.describe())
        print(f"{len(hits)} of {len(published_files())} published result files depend on {' '.join(args.impact)}.")
        return 0
    if args.stale:
        states = [freshness(s) for s in published_files()]
        for st in states:
            if st.state != "fresh":
                allowed = f"  [allowed: {STALE_ALLOWED[st.source]}]" if st.source in STALE_ALLOWED else ""
                print(st.describe() + allowed)
        print(f"{sum(s.state == 'fresh' for s in states)} of {len(states)} published result files are fresh.")
        return 0
    changed = 0
    for path, (old, new) in regenerate().items():
        if old == new:
            continue
        changed += 1
        rel = path.relative_to(ROOT).as_posix()
        if args.check:
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                                       f"{rel} (now)", f"{rel} (from the result files)"))
        else:
            path.write_text(new)
            print(f"wrote {rel}")
    if args.check and changed:
        print(f"\n{changed} file(s) differ from the result files: run python -m benchmarks.report")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
