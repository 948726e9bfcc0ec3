"""Package-level behaviour: lazy imports, public names, CLI synthesize."""

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import skdpsynth


def test_import_does_not_load_torch():
    code = ("import sys, skdpsynth; skdpsynth.TableSchema; skdpsynth.DPMarginalsSynthesizer; "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_public_names_resolve():
    missing = []
    for name in skdpsynth.__all__:
        try:
            getattr(skdpsynth, name)
        except (AttributeError, ModuleNotFoundError):
            missing.append(name)
    assert missing == [], f"public names that do not resolve: {missing}"
    with pytest.raises(AttributeError):
        skdpsynth.NoSuchThing  # noqa: B018


def test_cli_synthesize_writes_rows_and_budget_log(tmp_path, mixed_frame, mixed_schema):
    from skdpsynth.cli import main

    src, schema, out = tmp_path / "in.csv", tmp_path / "schema.json", tmp_path / "out.parquet"
    mixed_frame.to_csv(src, index=False)
    mixed_schema.to_json(schema)
    assert main(["synthesize", str(src), "--method", "marginals", "--epsilon", "1", "--schema", str(schema),
                 "--seed", "0", "-o", str(out), "--n-samples", "123"]) == 0
    synth = pd.read_parquet(out)
    assert synth.shape == (123, mixed_frame.shape[1])
    log = json.loads(out.with_name(out.name + ".budget.json").read_text())
    assert log["privacy_spent"]["epsilon"] <= 1.0 + 1e-9
    assert len(log["budget_log"]) == 1 + mixed_frame.shape[1]  # the clipped-value count, then one per column
    assert "clipped to the public bounds" in log["budget_log"][0]["target"]


def test_cli_missing_input_is_a_clear_error(tmp_path, capsys):
    from skdpsynth.cli import main

    # bad input: exit status 2 and one clear line, no traceback
    assert main(["synthesize", str(tmp_path / "nope.csv"), "--epsilon", "1", "-o", str(tmp_path / "o.csv")]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and "Traceback" not in err


def test_cli_rejects_bad_epsilon(tmp_path, capsys):
    from skdpsynth.cli import main

    src = tmp_path / "in.csv"
    pd.DataFrame({"a": np.arange(10.0)}).to_csv(src, index=False)
    out = str(tmp_path / "o.csv")
    assert main(["synthesize", str(src), "--method", "marginals", "--epsilon", "-1", "-o", out]) == 2
    assert "epsilon" in capsys.readouterr().err and not (tmp_path / "o.csv").exists()


def test_cli_datasets_list(capsys):
    from skdpsynth.cli import main

    assert main(["datasets", "list"]) == 0
    out = capsys.readouterr().out
    for name in ("adult", "uci_dropout", "uci_hesp", "oulad"):
        assert name in out


def test_cli_datasets_fetch_unknown_is_a_clear_error(tmp_path, capsys):
    from skdpsynth.cli import main

    code = main(["datasets", "fetch", "no_such_dataset", "--data-home", str(tmp_path)])
    assert code == 2
    err = capsys.readouterr().err
    assert "error: unknown dataset 'no_such_dataset'" in err and "uci_dropout" in err


def test_domain_estimate_error_is_public_and_raised_with_its_advice():
    """``DomainEstimateError`` is importable as the other errors are, and a refused estimate says what to do."""
    from skdpsynth import DomainEstimateError, DPMarginalsSynthesizer, PrivacyBudgetError, SchemaError, exceptions
    from skdpsynth.privacy._domain import DomainEstimateError as defined

    assert DomainEstimateError is exceptions.DomainEstimateError is defined
    assert "DomainEstimateError" in exceptions.__all__ and "DomainEstimateError" in skdpsynth.__all__
    assert issubclass(DomainEstimateError, PrivacyBudgetError) and issubclass(DomainEstimateError, SchemaError)
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"age": rng.integers(17, 40, 40), "course": rng.choice(["a", "b"], 40)})
    synth = DPMarginalsSynthesizer(epsilon=1.0)
    with pytest.raises(DomainEstimateError) as err:
        synth.fit(X)
    message = str(err.value)
    assert "'age'" in message and "'course'" in message  # every column it cannot serve, by name
    assert "skdpsynth schema draft" in message and "TableSchema.draft" in message and "epsilon" in message
