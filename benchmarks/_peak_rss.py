"""Peak resident memory of this process (standard library only: the peer runners import it in their own venvs)."""

from __future__ import annotations

from pathlib import Path


def peak_mib() -> float:
    """This process's peak resident set (MiB): VmHWM, which, unlike ru_maxrss, is not inherited across fork/exec."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
