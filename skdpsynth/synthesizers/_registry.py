"""The one list of synthesizers: lazy exports, the CLI's ``--method``, the benchmarks and the common tests.

A synthesizer is registered by one line here; from then on it is exported by
``skdpsynth`` and ``skdpsynth.synthesizers``, offered by the command line and
covered by ``tests/test_common.py``. The list stays written out (so that
``import skdpsynth`` imports no synthesizer module), and
:func:`skdpsynth.utils.estimator_checks.check_registry` holds it to a crawl of
the synthesizer modules: a public synthesizer class left out fails the tests.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

__all__ = ["SynthesizerInfo", "REGISTRY", "all_synthesizers", "by_method"]


@dataclass(frozen=True)
class SynthesizerInfo:
    """One registered synthesizer.

    Attributes
    ----------
    name : str
        Class name.
    module : str
        Module that defines it.
    method : str
        Short name used by the command line and the benchmarks.
    data : {"table", "sequence"}
        What it synthesizes.
    private : bool
        Whether it is differentially private.
    """

    name: str
    module: str
    method: str
    data: str
    private: bool = True

    def load(self) -> type:
        """Import and return the class."""
        return getattr(importlib.import_module(self.module), self.name)


_M = "skdpsynth.synthesizers."
REGISTRY: tuple[SynthesizerInfo, ...] = (
    SynthesizerInfo("NPGCSynthesizer", _M + "_npgc", "npgc", "table"),
    SynthesizerInfo("MSTSynthesizer", _M + "_mst", "mst", "table"),
    SynthesizerInfo("AIMSynthesizer", _M + "_aim", "aim", "table"),
    SynthesizerInfo("DPMarginalsSynthesizer", _M + "_marginals", "marginals", "table"),
    SynthesizerInfo("DPHistogramSynthesizer", _M + "_histogram", "histogram", "table"),
    SynthesizerInfo("DPCTGANSynthesizer", _M + "_dpctgan", "dpctgan", "table"),
    SynthesizerInfo("PATEGANSynthesizer", _M + "_pategan", "pategan", "table"),
    SynthesizerInfo("CAPSSynthesizer", _M + "_caps", "caps", "table"),
    SynthesizerInfo("DPMarkovSynthesizer", _M + "_markov", "markov", "sequence"),
    SynthesizerInfo("DPHistSeqSynthesizer", _M + "_histseq", "histseq", "sequence"),
    SynthesizerInfo("CTGANSynthesizer", _M + "_ctgan", "ctgan", "table", private=False),
    SynthesizerInfo("TVAESynthesizer", _M + "_ctgan", "tvae", "table", private=False),
)


def all_synthesizers(data: str | None = None, *, private: bool | None = None) -> list[tuple[str, type]]:
    """Registered synthesizers as ``(name, class)`` pairs, in the style of ``sklearn.utils.all_estimators``.

    Parameters
    ----------
    data : {"table", "sequence"}, optional
        Keep only synthesizers of this kind of data.
    private : bool, optional
        Keep only DP (True) or non-private (False) synthesizers.

    Returns
    -------
    list of (str, type)
    """
    return [(info.name, info.load()) for info in REGISTRY
            if (data is None or info.data == data) and (private is None or info.private == private)]


def by_method(method: str) -> SynthesizerInfo:
    """The registered synthesizer with this short name (``"npgc"``, ``"mst"``, ...)."""
    for info in REGISTRY:
        if info.method == method:
            return info
    raise KeyError(f"unknown method {method!r}; choose one of {sorted(i.method for i in REGISTRY)}.")
