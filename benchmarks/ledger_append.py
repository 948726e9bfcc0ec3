"""Ledger append cost against ledger size: warm appends, a process's first append, full verification.

Appends hold the writers' lock, re-check only the last verified line and what
others appended since, then write and fsync one line: their cost should not
grow with the ledger. A process's first append (and ``verify()``) reads the
whole file once.

    python benchmarks/ledger_append.py [--quick]

Writes results/ledger_append.json and .md.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import markdown_table, write_results  # noqa: E402

from skdpsynth.audit import Ledger  # noqa: E402


def audit_like_payload(i: int) -> dict:
    """About 16 KB of JSON, the size of a real audit entry (results, budget log, versions)."""
    record = {"mechanism": "geometric", "target": "histogram of column 'Curricular units 1st sem (grade)'",
              "kind": "pure", "epsilon": 0.027, "delta": 0.0, "rho": 0.0, "sensitivity": 1.0, "noise_scale": 37.0,
              "cohort": 0, "neighbouring": "add/remove one person (all of their records)", "details": {},
              "noise": "secure"}
    return {"i": i, "approved": False, "reasons": ["utility: TSTR/TRTR macro-F1 ratio 0.412 < 0.8"] * 3,
            "results": {name: {"score": 0.1 * k + i * 1e-6, "details": {f"d{j}": j * 0.123 for j in range(30)}}
                        for k, name in enumerate(("validity", "privacy", "utility", "fairness"))},
            "synthesizer": {"class": "skdpsynth.synthesizers._npgc.NPGCSynthesizer",
                            "budget_log": [record] * 40}}


def measure_at(led: Ledger, n_warm: int) -> dict:
    start = time.perf_counter()
    for k in range(n_warm):
        led.append("audit", audit_like_payload(k))
    warm = (time.perf_counter() - start) / n_warm
    Ledger._marks.clear()  # as seen by a process that has not read this ledger yet
    start = time.perf_counter()
    led.append("audit", audit_like_payload(-1))
    first = time.perf_counter() - start
    start = time.perf_counter()
    ok = led.verify()
    full = time.perf_counter() - start
    return {"warm_ms_per_append": 1e3 * warm, "first_append_ms": 1e3 * first, "verify_ms": 1e3 * full, "ok": ok}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="sizes up to 2,000 entries only")
    args = parser.parse_args(argv)
    sizes = (0, 500, 2000) if args.quick else (0, 500, 1000, 2000, 4000)
    n_warm = 20
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        led = Ledger(Path(tmp) / "ledger.jsonl")
        count = 0
        for size in sizes:
            for i in range(count, size):
                led.append("audit", audit_like_payload(i))
            count = max(count, size)
            row = {"entries": count, **measure_at(led, n_warm)}
            count += n_warm + 1
            row["entries_after"] = count
            row["file_mib"] = led.path.stat().st_size / 2**20
            rows.append(row)
            print(f"{row['entries']:>5} entries: {row['warm_ms_per_append']:.2f} ms/append, first append "
                  f"{row['first_append_ms']:.0f} ms, verify {row['verify_ms']:.0f} ms", flush=True)
    cols = ["entries", "file_mib", "warm_ms_per_append", "first_append_ms", "verify_ms"]
    md = ("# Ledger append cost\n\nAbout 16 KB per entry (an audit entry's size); each append fsyncs. "
          "`warm`: appends through a process that has verified the ledger (the mean of "
          f"{n_warm}); `first append`: a process's first append, which verifies the whole file once; `verify`: "
          "full verification on demand.\n\n" + markdown_table(rows, cols))
    write_results("ledger_append" + ("_quick" if args.quick else ""), {"rows": rows}, md)
    print(md)


if __name__ == "__main__":
    main()
