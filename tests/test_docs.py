"""The documentation is tested code: every ```python block of README.md and docs/*.md runs as written.

Each Markdown file is one test case: its Python blocks run in order, in one namespace, as one script
run by ``python`` in a subprocess (a failing block is reported by its index and line, and the next
blocks still run), in a fresh temporary working directory (so files the examples write never
touch the repository, and classes defined in a block are picklable). The loaders find the real data
through ``SKDPSYNTH_DATA_HOME`` (the shared data folder, laid out like their cache) and cannot download:
the proxy variables point at a closed local port. A block whose first line is a comment saying
"not run" is skipped. A ``print(...)`` whose comment says what it prints (``# True``, ``# False [...]``, then
any note after ':' or '(') fails its block when it prints anything else. The README's command-line lines run
afterwards on the files the quick start wrote.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import DATA_DIR, real_data_path

ROOT = Path(__file__).resolve().parents[1]
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)[ \t]*$")
#: loaders of real datasets: a doc that calls one reads ../shared/data and is marked ``realdata``
REAL_LOADERS = re.compile(r"\bload_(uci_dropout|uci_hesp|oulad|adult|dataset)\(")
SCRIPT_TIMEOUT_S = 600  # a hang, not a slow file: audit.md takes 160-290 s on 2 busy CPUs
QUICKSTART = ROOT / "docs" / "quickstart.md"
#: the README command lines worth running in the test (cheap ones: no demo, no download)
CLI_COMMANDS = ("synthesize", "audit", "datasets list")


@dataclass(frozen=True)
class Block:
    """One fenced code block: its language, its first line in the Markdown file and its dedented text."""

    lang: str
    line: int
    code: str

    @property
    def skipped(self) -> bool:
        """Whether the block opts out: its first line is a comment containing "not run"."""
        first = self.code.lstrip("\n").splitlines()[0].strip() if self.code.strip() else ""
        return first.startswith("#") and "not run" in first.lower()


def code_blocks(path: Path) -> list[Block]:
    """Every fenced block of a Markdown file (indented fences, as inside lists, included)."""
    blocks, lines, i = [], path.read_text(encoding="utf-8").splitlines(), 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, body = i + 1, []
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i])
            i += 1
        blocks.append(Block(m["lang"].lower(), start + 1, textwrap.dedent("\n".join(body)) + "\n"))
        i += 1
    return blocks


def python_blocks(path: Path) -> list[Block]:
    """The ```python blocks of a file that are meant to run."""
    return [b for b in code_blocks(path) if b.lang == "python" and not b.skipped]


RUNNER = """\
import json
import traceback

DOC = {doc!r}
BLOCKS = json.loads({blocks!r})
failed = []


def _said(claim, *args):
    # print(*args), then hold it to the doc's comment: what was printed, then nothing or a ':' / '(' note
    got = " ".join(str(a) for a in args)
    print(got)
    rest = claim[len(got):].lstrip() if claim.startswith(got) else None
    if rest is None or rest[:1] not in ("", ":", "("):
        raise AssertionError(f"printed {{got!r}} where the doc says {{claim!r}}")


for index, (line, code) in enumerate(BLOCKS, 1):
    try:
        # padded so that a traceback names the Markdown file and its line
        exec(compile("\\n" * (line - 1) + code, DOC, "exec"), globals())
    except Exception as exc:
        traceback.print_exc()
        failed.append(f"{{DOC_NAME}} block {{index}} (line {{line}}): {{type(exc).__name__}}: {{exc}}")
print(f"BLOCKS RUN: {{len(BLOCKS) - len(failed)}}/{{len(BLOCKS)}}", flush=True)
for failure in failed:
    print("FAILED", failure, flush=True)
raise SystemExit(1 if failed else 0)
"""


#: ``print(...)  # True ...`` / ``# False ...``: a line whose comment says what it prints (not "True or False")
CLAIM = re.compile(r"^(?P<indent>[ \t]*)print\((?P<args>.*)\)[ \t]*#[ \t]*"
                   r"(?P<claim>(?:True|False)\b(?! or\b).*?)[ \t]*$")


def checked_claims(code: str) -> str:
    """``code`` with each claimed print checked: the line prints as before, then fails unless the comment is right.

    The comment must start with exactly what is printed (the values joined by spaces), followed by nothing or a
    note after ':' or '('. The line numbers stay as they are, so a traceback still names the Markdown line.
    """
    def sub(m: re.Match[str]) -> str:
        return f"{m['indent']}_said({m['claim']!r}, {m['args']})"
    return "\n".join(CLAIM.sub(sub, line) for line in code.split("\n"))


def build_script(path: Path) -> str:
    """One script from a file's Python blocks: each block runs in turn in one namespace (that of ``__main__``).

    A block that raises is reported by its index and first line, with its traceback, and the next block still
    runs, so that one run names every failing block (later failures may follow from an earlier one).
    """
    blocks = json.dumps([(b.line, checked_claims(b.code)) for b in python_blocks(path)])
    rel = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name
    return RUNNER.format(doc=str(path), blocks=blocks).replace("{DOC_NAME}", rel)


def doc_env() -> dict[str, str]:
    """The examples' environment: real data from the shared folder, no network, no display, few threads."""
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    closed = "http://127.0.0.1:9"  # the discard port: any download attempt fails at once
    env.update({
        "SKDPSYNTH_DATA_HOME": str(DATA_DIR),
        "MPLBACKEND": "Agg",
        "http_proxy": closed, "https_proxy": closed, "HTTP_PROXY": closed, "HTTPS_PROXY": closed,
        "no_proxy": "", "NO_PROXY": "",
        "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
        "PYTHONHASHSEED": "0",
        "PYTHONWARNINGS": "ignore",
    })
    return env


def run_doc(doc: Path, cwd: Path) -> subprocess.CompletedProcess:
    """Run a file's Python blocks as one script in ``cwd`` and return the finished process."""
    script = cwd / f"_doc_{doc.stem}.py"
    script.write_text(build_script(doc), encoding="utf-8")
    try:
        return subprocess.run([sys.executable, str(script)], cwd=cwd, env=doc_env(), capture_output=True, text=True,
                              timeout=SCRIPT_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{doc.relative_to(ROOT)}: the examples ran over {SCRIPT_TIMEOUT_S} s\n{exc.stdout or ''}",
                    pytrace=False)


def check_doc(doc: Path, cwd: Path) -> None:
    """Fail naming every block of ``doc`` that raised (file, index, line), with the output."""
    proc = run_doc(doc, cwd)
    if proc.returncode != 0:
        summary = "\n".join(line for line in proc.stdout.splitlines() if line.startswith(("BLOCKS RUN", "FAILED")))
        pytest.fail(f"{doc.relative_to(ROOT)}: the examples exited with {proc.returncode}\n{summary}\n"
                    f"--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-6000:]}", pytrace=False)


def cli_lines(doc: Path) -> list[list[str]]:
    """A file's ``skdpsynth ...`` command lines that are cheap to run (see ``CLI_COMMANDS``)."""
    commands = []
    for block in code_blocks(doc):
        if block.lang not in ("bash", "sh", "shell", "console"):
            continue
        for line in block.code.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words[:1] == ["skdpsynth"] and " ".join(words[1:]).startswith(CLI_COMMANDS):
                commands.append(words)
    return commands


def run_cli(words: list[str], cwd: Path) -> None:
    """Run one documented command line in ``cwd``; ``skdpsynth audit`` may exit 1 (a rejected release)."""
    exe = Path(sys.executable).with_name("skdpsynth")
    argv = [str(exe) if exe.exists() else "skdpsynth", *words[1:]]
    proc = subprocess.run(argv, cwd=cwd, env=doc_env(), capture_output=True, text=True, timeout=SCRIPT_TIMEOUT_S)
    allowed = (0, 1) if words[1] == "audit" else (0,)
    if proc.returncode not in allowed:
        pytest.fail(f"`{shlex.join(words)}` exited with {proc.returncode}\n--- stdout\n{proc.stdout[-3000:]}\n"
                    f"--- stderr\n{proc.stderr[-3000:]}", pytrace=False)


# Every guide's examples run with ``-m slow`` (CI's slow step): each file is one fresh Python process that imports
# the whole stack and trains or audits (3-5 s of CPU for the short guides, 13-23 s for the README, docs/npgc.md and
# docs/architecture.md). The checks of the blocks themselves below (public API only, gallery scripts) run by default.


def _case(doc: Path):
    text = "".join(b.code for b in python_blocks(doc))
    name = str(doc.relative_to(ROOT))
    marks = [pytest.mark.realdata] if REAL_LOADERS.search(text) else []
    return pytest.param(doc, marks=[*marks, pytest.mark.slow], id=name)


@pytest.mark.parametrize("doc", [_case(d) for d in DOC_FILES if python_blocks(d)])
@pytest.mark.requires("torch", "opacus", "dp_accounting", "gdpnum", "matplotlib", "sdmetrics")  # [all]: guides use each
def test_doc_examples_run(doc: Path, tmp_path: Path) -> None:
    """A file's Python examples run as written, in order, as one script.

    After the quick start, the command lines of the README and of the quick start run on the files it wrote.
    """
    if REAL_LOADERS.search("".join(b.code for b in python_blocks(doc))):
        real_data_path()
    check_doc(doc, tmp_path)
    if doc == QUICKSTART:
        commands = cli_lines(ROOT / "README.md") + cli_lines(QUICKSTART)
        assert any(c[1] == "synthesize" and "--schema" in c for c in cli_lines(ROOT / "README.md")), (
            "the README lost its `skdpsynth synthesize ... --schema ...` line")
        for words in dict.fromkeys(tuple(c) for c in commands):
            run_cli(list(words), tmp_path)
        rerun_refuses_to_overwrite(cli_lines(ROOT / "README.md"), tmp_path)


def output_of(words: list[str]) -> str:
    """The ``-o`` / ``--output`` of a command line."""
    for flag in ("-o", "--output"):
        if flag in words:
            return words[words.index(flag) + 1]
    raise AssertionError(f"`{shlex.join(words)}` names no output")


def rerun_refuses_to_overwrite(commands: list[list[str]], cwd: Path) -> None:
    """A documented ``synthesize`` line run a second time exits 2 and leaves the first release as it was."""
    words = next(c for c in commands if c[1] == "synthesize")
    release = cwd / output_of(words)
    before = release.read_bytes()
    exe = Path(sys.executable).with_name("skdpsynth")
    proc = subprocess.run([str(exe) if exe.exists() else "skdpsynth", *words[1:]], cwd=cwd, env=doc_env(),
                          capture_output=True, text=True, timeout=SCRIPT_TIMEOUT_S)
    assert proc.returncode == 2 and "already exists" in proc.stderr and "--force" in proc.stderr, proc.stderr
    assert release.read_bytes() == before


def test_documented_releases_do_not_collide() -> None:
    """Following the README and the quick start in one folder never meets its own earlier output."""
    outputs = [output_of(c) for doc in (ROOT / "README.md", QUICKSTART) for c in cli_lines(doc)
               if c[1] == "synthesize"]
    assert outputs and len(outputs) == len(set(outputs)), outputs


@pytest.mark.parametrize("doc", [pytest.param(d, id=str(d.relative_to(ROOT))) for d in DOC_FILES])
def test_doc_examples_use_the_public_api(doc: Path) -> None:
    """Examples import only public names and load data the way a user does (no repository-relative data paths)."""
    for block in python_blocks(doc):
        private = re.findall(r"^\s*(?:from|import)\s+(skdpsynth[\w.]*\._\w+)", block.code, flags=re.M)
        assert not private, f"{doc.name}:{block.line}: private import {private}"
        assert "shared/data" not in block.code, f"{doc.name}:{block.line}: load data with the loaders, not a path"


def test_architecture_has_runnable_templates() -> None:
    """docs/architecture.md shows how to add a synthesizer and a check, each with code that runs (above)."""
    doc = ROOT / "docs" / "architecture.md"
    text = doc.read_text(encoding="utf-8")
    sections = {s.split("\n", 1)[0]: s for s in re.split(r"^## ", text, flags=re.M)[1:]}
    for title, needles in {"Adding a synthesizer": ("BaseTabularSynthesizer", "check_synthesizer", "check_estimator"),
                           "Adding a check": ("BaseCheck", "CheckResult", "ReleaseAuditor", "redact")}.items():
        assert title in sections, f"docs/architecture.md lacks the section {title!r}"
        body = sections[title]
        assert "```python" in body and "not run" not in body, f"{title!r} needs a runnable example"
        assert all(n in body for n in needles), f"{title!r} should use {needles}"


def test_skip_marker_and_indented_fences(tmp_path: Path) -> None:
    """The extractor keeps indented blocks (inside lists) and honours the "not run" comment."""
    md = tmp_path / "x.md"
    md.write_text("1. step\n\n   ```python\n   x = 1\n   ```\n\n```python\n# not run: needs a GPU\nboom()\n```\n"
                  "```bash\necho hi\n```\n", encoding="utf-8")
    blocks = code_blocks(md)
    assert [b.lang for b in blocks] == ["python", "python", "bash"]
    assert blocks[0].code == "x = 1\n" and blocks[0].line == 4
    assert [b.code for b in python_blocks(md)] == ["x = 1\n"]


def test_runner_reports_every_failing_block(tmp_path: Path) -> None:
    """The runner names each failing block by index and Markdown line, and runs the blocks after it."""
    md = tmp_path / "x.md"
    md.write_text("# t\n\n```python\nx = 1\n```\n\n```python\n\nprint(y)\n```\n\n```python\nprint('ran', x)\n"
                  "class C:\n    pass\n```\n\n```python\nimport pickle\npickle.dumps(C())\n1 / 0\n```\n",
                  encoding="utf-8")
    proc = run_doc(md, tmp_path)
    assert proc.returncode == 1
    assert "BLOCKS RUN: 2/4" in proc.stdout and "ran 1" in proc.stdout
    assert "FAILED x.md block 2 (line 8): NameError: name 'y' is not defined" in proc.stdout
    assert "FAILED x.md block 4 (line 19): ZeroDivisionError" in proc.stdout
    assert f'File "{md}", line 9' in proc.stderr and "print(y)" in proc.stderr


def test_runner_holds_prints_to_the_doc_s_comments(tmp_path: Path) -> None:
    """A ``print(...)  # True ...`` line fails its block when it prints something else; notes after ':' are free."""
    md = tmp_path / "x.md"
    md.write_text("```python\nprint(1 < 2)  # True: a note\nprint(1 < 2, [])  # True []\n"
                  "print(2 < 1)  # True or False\n```\n\n```python\nprint(1 < 2)  # True True\n```\n\n"
                  "```python\nprint(2 < 1, 'a')  # False b\n```\n",
                  encoding="utf-8")
    proc = run_doc(md, tmp_path)
    assert "BLOCKS RUN: 1/3" in proc.stdout, proc.stdout
    assert "FAILED x.md block 2 (line 8): AssertionError: printed 'True' where the doc says 'True True'" in proc.stdout
    assert "block 3 (line 12): AssertionError: printed 'False a' where the doc says 'False b'" in proc.stdout


def _site_config():
    """docs/conf.py loaded as a module (it imports only the package: no Sphinx needed)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_docs_conf", ROOT / "docs" / "conf.py")
    conf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conf)
    return conf


@pytest.mark.requires("torch")  # the API pages import every documented module, skdpsynth.models too
def test_api_pages_document_every_public_name_once(tmp_path: Path) -> None:
    """The site's API pages list every public callable of every documented module, each object on one page."""
    import importlib

    conf = _site_config()
    conf.write_api_pages(tmp_path)
    pages = {m: (tmp_path / f"{m}.rst").read_text(encoding="utf-8") for m in conf.API_MODULES}
    documented: dict[int, list[str]] = {}
    for modname, text in pages.items():
        mod = importlib.import_module(modname)
        summarised = re.findall(r"^   (\w+)$", text, flags=re.M)
        linked = re.findall(rf"^- ``{re.escape(modname)}\.(\w+)``: :obj:`([\w.]+)`$", text, flags=re.M)
        for name in summarised:
            documented.setdefault(id(getattr(mod, name)), []).append(f"{modname}.{name}")
        public = {n for n in mod.__all__ if not n.startswith("_") and callable(getattr(mod, n))}
        assert public == set(summarised) | {n for n, _ in linked}, modname
        assert public, f"{modname} documents nothing"
    assert all(len(where) == 1 for where in documented.values()), [w for w in documented.values() if len(w) > 1]
    for modname, text in pages.items():
        for _, target in re.findall(rf"^- ``{re.escape(modname)}\.(\w+)``: :obj:`([\w.]+)`$", text, flags=re.M):
            assert any(target in where for where in documented.values()), target
    assert "synthesizers" in pages["skdpsynth.synthesizers"] and "list-table" in pages["skdpsynth.synthesizers"]


def test_gallery_examples_are_complete_scripts() -> None:
    """Every examples/plot_*.py has a titled docstring (the gallery's page) and compiles; the index is listed."""
    import ast

    examples = sorted((ROOT / "examples").glob("plot_*.py"))
    assert len(examples) >= 3 and (ROOT / "examples" / "README.txt").exists()
    for path in examples:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        doc = ast.get_docstring(tree) or ""
        title, underline = (doc.splitlines() + ["", ""])[:2]
        assert title and set(underline) == {"="} and len(underline) >= len(title), path.name
        assert not re.search(r"^\s*(?:from|import)\s+skdpsynth[\w.]*\._", path.read_text(), flags=re.M), path.name
    toc = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    assert "auto_examples/index" in toc and "api" in toc
    for doc in DOC_FILES[1:]:
        if doc.stem not in ("index", "api"):
            assert re.search(rf"^{doc.stem}$", toc, flags=re.M), f"docs/index.md does not list {doc.name}"


@pytest.mark.requires("torch")  # the API pages import every documented module, skdpsynth.models too
def test_api_pages_list_every_error(tmp_path: Path) -> None:
    """Every public error and warning of ``skdpsynth.exceptions`` has its page in the site's API reference."""
    from skdpsynth import exceptions

    conf = _site_config()
    conf.write_api_pages(tmp_path)
    text = "\n".join(p.read_text(encoding="utf-8") for p in tmp_path.glob("*.rst"))
    summarised = set(re.findall(r"^   (\w+)$", text, flags=re.M))
    missing = [name for name in exceptions.__all__ if name not in summarised]
    assert not missing, f"the API pages lack {missing}: export them from skdpsynth (docs/conf.py reads __all__)"
