"""Helpers shared by the benchmark scripts: timing, peak memory, result files.

Every result file is written by :func:`write_results`, which stamps it (``stamp``: the commit, the date, the
command line, the versions, the machine and ``depends``, the sha256 of every file of this repository the
benchmark had loaded) and holds no absolute path of this machine (paths under the repository become relative;
others are rewritten or refused). ``python -m benchmarks.report`` reads these files.
"""

from __future__ import annotations

import atexit
import datetime
import hashlib
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
#: the folders of this repository whose loaded modules a result depends on
DEPEND_DIRS = ("skdpsynth", "benchmarks")
#: the packages whose versions a stamp records (when installed; torch only when the benchmark imported it)
VERSIONED = ("numpy", "scipy", "pandas", "scikit-learn", "sdmetrics", "skdpsynth")
SHARED_DATA = Path(os.environ.get("SKDPSYNTH_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


def measure(fn: Callable[[], Any], interval: float = 0.005) -> tuple[Any, float, float]:
    """Run ``fn``; return (result, wall seconds, peak RSS increase in MiB, sampled in a thread)."""
    proc = psutil.Process()
    base = proc.memory_info().rss
    peak = [base]
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], proc.memory_info().rss)
            time.sleep(interval)

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    start = time.perf_counter()
    try:
        result = fn()
    finally:
        elapsed = time.perf_counter() - start
        done.set()
        t.join()
    peak[0] = max(peak[0], proc.memory_info().rss)
    return result, elapsed, (peak[0] - base) / 2**20


def machine() -> dict[str, Any]:
    """Facts about the machine the benchmark ran on."""
    return {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()}


def markdown_table(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None, digits: int = 3) -> str:
    """A markdown table of dict rows."""
    columns = list(columns or rows[0].keys())
    def fmt(v: Any) -> str:
        return f"{v:.{digits}g}" if isinstance(v, float) else str(v)
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(fmt(r.get(c, "")) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def sha256(path: str | Path) -> str:
    """The sha256 of a file's bytes (hex)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], capture_output=True, text=True, cwd=ROOT, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


#: the environment variable naming the file where every process of one benchmark run logs the repository
#: modules it imports (worker processes inherit it, so their imports count for the run's results)
IMPORT_LOG_ENV = "SKDPSYNTH_BENCHMARK_IMPORT_LOG"
_BENCHMARK_MODULES = frozenset(path.stem for path in Path(__file__).resolve().parent.glob("*.py"))


def _repo_module(name: str) -> bool:
    top = name.split(".")[0]
    return top in DEPEND_DIRS or top in _BENCHMARK_MODULES


class _ImportLog:
    """A meta-path finder that finds nothing and appends each repository module's name to the run's log."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.seen: set[str] = set()

    def log(self, names: Iterable[str]) -> None:
        new = [n for n in names if n not in self.seen and _repo_module(n)]
        if new:
            self.seen.update(new)
            try:
                with open(self.path, "a") as fh:  # one short append per import: atomic across processes
                    fh.write("".join(f"{n}\n" for n in new))
            except OSError:
                pass

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        self.log([fullname])
        return None


def _install_import_log() -> None:
    """Log this process's repository imports to the run's file (made by the first process of the run)."""
    path = os.environ.get(IMPORT_LOG_ENV)
    if not path:
        fd, path = tempfile.mkstemp(prefix="skdpsynth-imports-", suffix=".txt")
        os.close(fd)
        os.environ[IMPORT_LOG_ENV] = path
        owner = os.getpid()
        atexit.register(lambda: os.getpid() == owner and Path(path).unlink(missing_ok=True))
    if not any(type(f).__name__ == "_ImportLog" for f in sys.meta_path):  # one per process, however imported
        finder = _ImportLog(path)
        finder.log(list(sys.modules))
        sys.meta_path.insert(0, finder)


_install_import_log()


def _module_file(name: str) -> Path | None:
    """The file of a repository module named ``name`` (without importing it)."""
    module = sys.modules.get(name)
    if getattr(module, "__file__", None):
        return Path(module.__file__).resolve()
    parts = name.split(".")
    base = ROOT.joinpath(*parts) if parts[0] in DEPEND_DIRS else ROOT / "benchmarks" / Path(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def loaded_dependencies(extra: Iterable[str | Path] = ()) -> dict[str, str]:
    """``{repo-relative path: sha256}`` of this repository's modules the run has loaded, plus ``extra`` files.

    A module counts when its file lies under one of :data:`DEPEND_DIRS` of this repository (the running
    script, ``__main__``, included) and it was loaded by this process or by a worker process of the run (every
    process that imports this module logs its repository imports to the file named by :data:`IMPORT_LOG_ENV`,
    which worker processes inherit); modules loaded from elsewhere (an installed or exported older copy) do not.
    """
    files: set[Path] = set()
    for module in list(sys.modules.values()):
        name = getattr(module, "__file__", None)
        if name:
            files.add(Path(name).resolve())
    log = os.environ.get(IMPORT_LOG_ENV)
    if log and Path(log).is_file():
        for name in set(Path(log).read_text().split()):
            path = _module_file(name)
            if path is not None:
                files.add(path)
    files.update(Path(p).resolve() if Path(p).is_absolute() else (ROOT / p).resolve() for p in extra)
    deps = {}
    for path in files:
        try:
            rel = path.relative_to(ROOT)
        except ValueError:
            continue
        if rel.parts and rel.parts[0] in DEPEND_DIRS and path.suffix == ".py" and path.is_file():
            deps[rel.as_posix()] = sha256(path)
    return dict(sorted(deps.items()))


def _versions() -> dict[str, str]:
    from importlib import metadata

    names = list(VERSIONED) + (["torch"] if "torch" in sys.modules else [])
    out = {"python": platform.python_version()}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def command_line(argv: Sequence[str] | None = None) -> str:
    """The command that reruns this benchmark from the repository root (script path made relative)."""
    argv = list(sys.argv if argv is None else argv)
    script = Path(argv[0]) if argv else Path("?")
    try:
        script_text = script.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        script_text = str(script)
    return relative_text(" ".join(["python", script_text, *argv[1:]]))


def stamp(depends: Iterable[str | Path] = ()) -> dict[str, Any]:
    """What a result file records about the run that wrote it.

    ``commit`` is this checkout's HEAD and ``dirty`` says whether any file of ``depends`` differs from it
    (a result measured on uncommitted code); ``depends`` maps each repository file the benchmark had loaded
    to its sha256, which ``tests/test_results_fresh.py`` compares with the files as they are now.
    """
    deps = loaded_dependencies(depends)
    dirty = _git("status", "--porcelain", "--", *deps) if deps else ""
    return {
        "commit": _git("rev-parse", "HEAD"),
        "dirty": bool(dirty) if dirty is not None else None,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": command_line(),
        "versions": _versions(),
        "machine": machine(),
        "depends": deps,
    }


_ABS_ROOTS = ("home", "work", "tmp", "root", "Users", "var", "opt", "mnt", "srv", "usr", "private", "data",
              "scratch")


def _abs_pattern() -> re.Pattern[str]:
    tops = set(_ABS_ROOTS)
    try:
        tops.update(p for p in os.listdir("/") if re.fullmatch(r"[\w.+-]+", p))
    except OSError:
        pass
    alternatives = "|".join(sorted(map(re.escape, tops), key=len, reverse=True))
    # an absolute path: a slash not preceded by a word character, a dot, a slash or a colon (so "MiB/s",
    # "./x", "https://" do not count), a top-level folder of a machine, then a slash or the end
    return re.compile(rf"(?<![\w./:~<>-])/(?:{alternatives})(?=/|$|[\s'\"),;\]])")


ABSOLUTE_PATH = _abs_pattern()


def relative_text(text: str) -> str:
    """``text`` with this repository's absolute paths made relative (and the temporary folder written ``<tmp>``).

    Paths under the repository become repo-relative, paths under its parent folder ``../...``, the temporary
    folder ``<tmp>`` and the home folder ``~``.
    """
    root = str(ROOT)
    subs = [(root + "/", ""), (root, "."), (str(ROOT.parent) + "/", "../"),
            (str(Path(tempfile.gettempdir()).resolve()) + "/", "<tmp>/"), ("/tmp/", "<tmp>/"),
            (str(Path.home()) + "/", "~/")]
    for old, new in subs:
        if old.strip("/"):  # never the root folder itself (a checkout at /repo has "/" for parent)
            text = re.sub(rf"(?<![\w./]){re.escape(old)}", new, text)
    return text


def relative_paths(obj: Any) -> Any:
    """A copy of a JSON-like payload with :func:`relative_text` applied to every string (keys included)."""
    if isinstance(obj, str):
        return relative_text(obj)
    if isinstance(obj, Path):
        return relative_text(str(obj))
    if isinstance(obj, dict):
        return {relative_paths(k) if isinstance(k, str) else k: relative_paths(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [relative_paths(v) for v in obj]
    return obj


def absolute_paths(text: str) -> list[str]:
    """The absolute paths of a machine found in ``text`` (each with a little context)."""
    return [text[max(0, m.start() - 20): m.end() + 40].replace("\n", " ") for m in ABSOLUTE_PATH.finditer(text)]


def write_results(name: str, payload: dict[str, Any], markdown: str, *,
                  depends: Iterable[str | Path] = ()) -> Path:
    """Write ``results/NAME.json`` and ``results/NAME.md``, stamped; returns the JSON path.

    Parameters
    ----------
    name : str
        The file name without extension.
    payload : dict
        The results (JSON-serialisable; other objects are written with ``str``). A ``stamp`` key is added
        (see :func:`stamp`), and ``machine`` as before.
    markdown : str
        The human-readable report.
    depends : iterable of path, default=()
        Repository files the results depend on beyond the modules loaded in this process (e.g. the modules a
        worker subprocess imports).

    Raises
    ------
    ValueError
        If the payload or the report still hold an absolute path of this machine once the repository's paths
        are made relative.
    """
    RESULTS.mkdir(parents=True, exist_ok=True)
    payload = relative_paths({"machine": machine(), **payload, "stamp": stamp(depends)})
    text = json.dumps(payload, indent=2, default=lambda o: relative_text(str(o)))
    markdown = relative_text(markdown)
    found = absolute_paths(text) + absolute_paths(markdown)
    if found:
        raise ValueError(f"results/{name} would hold absolute paths of this machine: {found[:5]}")
    path = RESULTS / f"{name}.json"
    path.write_text(text + "\n")
    (RESULTS / f"{name}.md").write_text(markdown + "\n")
    return path
