"""Helpers shared by the benchmark scripts: timing, peak memory, result files."""

from __future__ import annotations

import json
import os
import platform
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import psutil

RESULTS = Path(__file__).resolve().parent / "results"
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


def write_results(name: str, payload: dict[str, Any], markdown: str) -> Path:
    """Write ``results/NAME.json`` and ``results/NAME.md``; returns the JSON path."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    payload = {"machine": machine(), **payload}
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2, default=str))
    (RESULTS / f"{name}.md").write_text(markdown + "\n")
    return path
