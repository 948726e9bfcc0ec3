"""The core install: what needs an extra says which one when it is used, never at import."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from skdpsynth.utils._optional import EXTRAS, import_optional, missing

# A package made absent the way the import system reports one: a finder ahead of site-packages answers
# ModuleNotFoundError. (``sys.modules["torch"] = None`` does the same for ``import torch``, but SciPy's
# array-API helpers then call getattr on that None entry and scipy.stats fails to import.)
_ABSENT = """
import sys

class _Absent:
    def __init__(self, names):
        self.names = set(names)

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, _Absent({names!r}))
"""


def run_without(names: tuple[str, ...], body: str) -> subprocess.CompletedProcess:
    code = _ABSENT.format(names=list(names)) + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)


def test_without_the_deep_extra_deep_classes_import_and_name_the_extra_at_fit_before_any_spend():
    out = run_without(EXTRAS["deep"], """
        import sys

        import skdpsynth
        from skdpsynth import CAPSSynthesizer, DPCTGANSynthesizer, PATEGANSynthesizer
        from skdpsynth.datasets import make_learning_habits

        data = make_learning_habits(150, n_weeks=2, random_state=0)
        for cls in (CAPSSynthesizer, DPCTGANSynthesizer, PATEGANSynthesizer):
            est = cls(schema=data.schema, random_state=0)
            try:
                est.fit(data.frame)
            except ImportError as exc:
                assert 'pip install "skdpsynth[deep]"' in str(exc) and cls.__name__ in str(exc), str(exc)
                assert not hasattr(est, "budget_log_"), "the refusal came after budget was spent"
            else:
                raise AssertionError(f"{cls.__name__} fitted without torch")
        try:
            from skdpsynth.models import DKT  # noqa: F401
        except ImportError as exc:
            assert 'pip install "skdpsynth[deep]"' in str(exc), str(exc)
        else:
            raise AssertionError("the torch models imported without torch")
        assert "torch" not in sys.modules
        # the command line says which extra to install, as bad input (exit 2), not as an internal error
        import contextlib, io, pathlib, tempfile
        from skdpsynth.cli import main
        with tempfile.TemporaryDirectory() as tmp:
            data.frame.to_csv(pathlib.Path(tmp) / "data.csv", index=False)
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                code = main(["synthesize", str(pathlib.Path(tmp) / "data.csv"), "--method", "dpctgan", "--epsilon",
                             "1", "-o", str(pathlib.Path(tmp) / "out.csv")])
            assert code == 2 and 'skdpsynth[deep]' in err.getvalue(), (code, err.getvalue())
            assert "internal error" not in err.getvalue() and not (pathlib.Path(tmp) / "out.csv").exists()
        print("checked")
    """)
    assert out.returncode == 0 and out.stdout.strip() == "checked", out.stderr[-3000:]


def test_without_the_report_extra_quality_scores_and_figures_name_the_extra():
    out = run_without(EXTRAS["report"] + ("gdpnum",), """
        import pandas as pd

        from skdpsynth.metrics import sdmetrics_quality
        from skdpsynth.privacy import dpsgd_privacy_report

        frame = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": ["x", "y", "x"]})
        calls = [(lambda: sdmetrics_quality(frame, frame), "report"),
                 (lambda: dpsgd_privacy_report(noise_multiplier=1.0, sample_rate=0.1, steps=10, delta=1e-5), "deep")]
        for call, extra in calls:
            try:
                call()
            except ImportError as exc:
                assert f'pip install "skdpsynth[{extra}]"' in str(exc), str(exc)
            else:
                raise AssertionError("ran without its extra")
        print("checked")
    """)
    assert out.returncode == 0 and out.stdout.strip() == "checked", out.stderr[-3000:]


def test_an_unrelated_missing_module_is_not_reported_as_an_extra():
    with pytest.raises(ModuleNotFoundError) as info:
        import_optional("skdpsynth._no_such_module", "this test")
    assert "pip install" not in str(info.value) and info.value.name == "skdpsynth._no_such_module"


def test_missing_names_only_absent_packages():
    assert missing("numpy", "skdpsynth_no_such_package") == ["skdpsynth_no_such_package"]
