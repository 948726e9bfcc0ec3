"""The PEARL grid's methods: every registered DP synthesizer of a data kind, with the grid's (reduced) settings.

The methods come from :mod:`skdpsynth.synthesizers._registry` (the one list of
synthesizers): a newly registered DP synthesizer (e.g. AIM) joins the grid
without an edit here. Only its settings below are optional.
"""

from __future__ import annotations

import math
from typing import Any

from skdpsynth.synthesizers._registry import REGISTRY, SynthesizerInfo

__all__ = ["grid_methods", "make_synthesizer", "display_name", "histogram_fit", "load_method", "expected_cpu_s",
           "EXCLUDED", "DELTA", "CPU_S"]

DELTA = 1e-6  # below the privacy-guarantee check's delta_max (1e-5)

#: registered DP synthesizers that are not PEARL methods, and why
EXCLUDED = {"caps": "CAPS is a cyclic semi-supervised generator that needs public pre-training data and cohorts; "
                    "it is not one of the paper's methods"}

DISPLAY = {"histogram": "DP-Histogram", "marginals": "DP-Marginals", "mst": "MST", "dpctgan": "DP-CTGAN",
           "pategan": "PATE-GAN", "npgc": "NPGC", "aim": "AIM", "markov": "DP-Markov", "histseq": "DP-HistSeq"}

#: per-method settings of the full grid (GANs at small epochs); quick mode shrinks them further
SETTINGS: dict[str, dict[str, Any]] = {
    "histogram": {"n_bins": 3},
    "marginals": {"n_bins": 32},
    "mst": {"n_bins": 16},
    "npgc": {},
    "aim": {"n_bins": 16},
    "dpctgan": {"epochs": 5, "batch_size": 128, "hidden_dims": (64, 64)},
    "pategan": {"n_iter": 30, "batch_size": 64},
    "markov": {"order": 1},
    "histseq": {},
}
QUICK = {"dpctgan": {"epochs": 1}, "pategan": {"n_iter": 5}}
#: cheapest first: an interrupted grid keeps the most settings
ORDER = ("marginals", "npgc", "mst", "histogram", "markov", "histseq", "aim", "dpctgan", "pategan")


#: CPU seconds of one setting (fit + audit, one worker, torch on one thread, dataset already loaded), measured
#: with ``process_time``: single settings (oulad_clicks markov 65 and histseq 50 at epsilon 1, kt_bkt markov 39
#: and histseq 33, uci_dropout dpctgan 21, pategan 14, mst 8, npgc 7, marginals 6, oulad histogram 16 at epsilon
#: 0.5) and every uci_hesp setting; the rest from the wall times of the one-seed grid divided
#: by its measured wall/CPU ratio (about 5 under that run's load). They order the grid (most expensive first)
#: and estimate the time left; a pair not listed counts DEFAULT_CPU_S.
CPU_S: dict[tuple[str, str], float] = {
    ("oulad_clicks", "markov"): 65.0, ("oulad_clicks", "histseq"): 50.0,
    ("kt_bkt", "markov"): 40.0, ("kt_bkt", "histseq"): 33.0,
    ("uci_dropout", "dpctgan"): 22.0, ("uci_dropout", "pategan"): 14.0, ("uci_dropout", "mst"): 8.0,
    ("uci_dropout", "npgc"): 7.0, ("uci_dropout", "marginals"): 7.0, ("uci_dropout", "aim"): 3.0,
    ("oulad", "histogram"): 12.0, ("oulad", "dpctgan"): 4.0, ("oulad", "pategan"): 3.0, ("oulad", "mst"): 2.5,
    ("oulad", "npgc"): 2.5, ("oulad", "marginals"): 2.0, ("oulad", "aim"): 0.5,
    ("uci_hesp", "pategan"): 4.5, ("uci_hesp", "aim"): 2.0, ("uci_hesp", "dpctgan"): 1.5, ("uci_hesp", "mst"): 1.5,
    ("uci_hesp", "npgc"): 1.1, ("uci_hesp", "marginals"): 0.8,
}
DEFAULT_CPU_S = 5.0


def expected_cpu_s(dataset: str, method: str) -> float:
    """The expected CPU seconds of one setting of ``method`` on ``dataset`` (:data:`CPU_S`)."""
    return CPU_S.get((dataset, method), DEFAULT_CPU_S)


def grid_methods(data: str) -> list[str]:
    """Short names of the registered DP synthesizers of ``data`` ("table" / "sequence") in the grid."""
    found = [i.method for i in REGISTRY if i.data == data and i.private and i.method not in EXCLUDED]
    return sorted(found, key=lambda m: ORDER.index(m) if m in ORDER else len(ORDER))


def display_name(method: str) -> str:
    """The paper's spelling of a method."""
    return DISPLAY.get(method, method)


def _info(method: str) -> SynthesizerInfo:
    for info in REGISTRY:
        if info.method == method:
            return info
    raise KeyError(f"{method!r} is not registered")


def load_method(method: str) -> type:
    """The synthesizer class registered as ``method`` (imported)."""
    return _info(method).load()


def histogram_fit(schema: Any, max_cells: int = 10_000_000) -> tuple[bool, float]:
    """Whether DP-Histogram's joint table over the public grid fits ``max_cells``, and its number of cells."""
    from skdpsynth._grid import PublicGrid

    cells = float(math.prod(float(c) for c in PublicGrid(schema, SETTINGS["histogram"]["n_bins"]).n_cells))
    return cells <= max_cells, cells


def _params(method: str, cls: type, scenario: Any, quick: bool) -> dict[str, Any]:
    wanted = {**SETTINGS.get(method, {}), **(QUICK.get(method, {}) if quick else {})}
    if method == "pategan":  # about 100 training rows per teacher, 5 to 50 teachers
        wanted["n_teachers"] = max(5, min(50, len(scenario.train) // 100))
    accepted = cls().get_params(deep=False)
    return {k: v for k, v in wanted.items() if k in accepted}


def make_synthesizer(method: str, epsilon: float, scenario: Any, seed: int, quick: bool = False) -> Any:
    """The unfitted synthesizer of one setting (public schema or vocabulary, fresh secure noise)."""
    info = _info(method)
    cls = info.load()
    params = _params(method, cls, scenario, quick)
    common = {"epsilon": epsilon, "delta": DELTA, "random_state": seed}
    if info.data == "table":
        return cls(schema=scenario.schema, **common, **params)
    seq = dict(scenario.sequence)
    seq = {k: v for k, v in seq.items() if v is not None}
    return cls(**seq, **common, **params)
