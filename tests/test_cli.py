"""The command line a newcomer can trust: nothing overwritten, no tracebacks, clear errors, valid JSON."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_audit import make_students, student_schema

from skdpsynth import DPMarginalsSynthesizer, TableSchema
from skdpsynth._io import InputError, TableWriter, check_output, dumps_json, read_table
from skdpsynth.cli import main

N = 300


def _strict(text: str):
    """json.loads that refuses Infinity / NaN."""
    def bad(name):
        raise AssertionError(f"invalid JSON constant {name}")
    return json.loads(text, parse_constant=bad)


@pytest.fixture
def files(tmp_path):
    """A small student table (CSV) and its public schema."""
    df = make_students(N, 0)
    df.to_csv(tmp_path / "data.csv", index=False)
    student_schema().to_json(tmp_path / "schema.json")
    return tmp_path


def synth_args(d: Path, *extra: str, data: str = "data.csv", out: str = "out.csv", schema: bool = True) -> list[str]:
    args = ["synthesize", str(d / data), "--method", "marginals", "--epsilon", "2", "-o", str(d / out)]
    return args + (["--schema", str(d / "schema.json")] if schema else []) + list(extra)


def _mask(text: str) -> str:
    """Output with every number masked (noisy figures differ between runs; the words must not)."""
    return re.sub(r"\d[\d,.e+-]*", "#", text)


def run(capsys, args):
    code = main(args)
    cap = capsys.readouterr()
    assert "Traceback" not in cap.err or "--debug" in args
    return code, cap.out, cap.err


# --------------------------------------------------------------------------- reading
def test_semicolon_csv_is_sniffed(files, capsys):
    make_students(N, 0).to_csv(files / "semi.csv", sep=";", index=False)
    code, out, err = run(capsys, synth_args(files, data="semi.csv"))
    assert code == 0, err
    release = pd.read_csv(files / "out.csv")
    assert list(release.columns) == list(student_schema().names)


def test_explicit_separator(files, capsys):
    make_students(N, 0).to_csv(files / "pipe.txt", sep="|", index=False)
    code, _, err = run(capsys, synth_args(files, "--sep", "|", data="pipe.txt"))
    assert code == 0, err
    code, _, err = run(capsys, synth_args(files, "--sep", ",", "--force", data="pipe.txt"))
    assert code == 2 and "skdpsynth: error:" in err


def test_latin1_needs_and_works_with_encoding(files, capsys):
    df = make_students(N, 0)
    df["course"] = df["course"].replace({"art": "économie"})
    df.to_csv(files / "latin.csv", index=False, encoding="latin-1")
    schema = student_schema().to_dict()
    schema["columns"]["course"]["categories"] = ["math", "bio", "économie"]
    (files / "schema.json").write_text(json.dumps(schema), encoding="utf-8")
    code, _, err = run(capsys, synth_args(files, data="latin.csv"))
    assert code == 2 and "--encoding latin-1" in err
    assert "0xe9" not in err and "position" not in err  # the byte and where it is belong to someone's value
    assert not (files / "out.csv").exists()
    code, _, err = run(capsys, synth_args(files, "--encoding", "latin-1", data="latin.csv"))
    assert code == 0, err
    assert set(pd.read_csv(files / "out.csv")["course"].dropna()) <= {"math", "bio", "économie"}


def test_empty_file(files, capsys):
    (files / "empty.csv").write_text("")
    code, _, err = run(capsys, synth_args(files, data="empty.csv"))
    assert code == 2 and "empty" in err
    (files / "header.csv").write_text("score,attendance,course,group,outcome\n")
    code, _, err = run(capsys, synth_args(files, data="header.csv"))
    assert code == 2 and "no data rows" in err


def test_directory_as_input_and_output(files, capsys):
    (files / "folder.csv").mkdir()
    code, _, err = run(capsys, synth_args(files, data="folder.csv"))
    assert code == 2 and "is a folder" in err
    code, _, err = run(capsys, synth_args(files, out="folder.csv"))
    assert code == 2 and "is a folder" in err


def _read_only_dir(tmp_path: Path) -> Path:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        (ro / "probe").touch()
    except OSError:
        return ro
    (ro / "probe").unlink()
    if Path("/sys").is_dir() and not os.access("/sys", os.W_OK | os.X_OK) or _cannot_write("/sys"):
        return Path("/sys") / "skdpsynth-test"  # running as root: chmod does not stop writes, sysfs does
    pytest.skip("no read-only location available")


def _cannot_write(folder: str) -> bool:
    try:
        Path(folder, ".skdpsynth-probe").touch()
    except OSError:
        return True
    Path(folder, ".skdpsynth-probe").unlink()
    return False


def test_read_only_output_location(files, capsys):
    ro = _read_only_dir(files)
    args = synth_args(files)
    args[args.index("-o") + 1] = str(ro / "out.csv")
    code, _, err = run(capsys, args)
    assert code == 2 and "cannot write" in err and "fitting" not in err


def test_existing_output_refused_without_force(files, capsys):
    (files / "out.csv").write_text("keep me\n")
    code, _, err = run(capsys, synth_args(files))
    assert code == 2 and "already exists" in err and "--force" in err and "fitting" not in err
    assert (files / "out.csv").read_text() == "keep me\n"
    code, _, err = run(capsys, synth_args(files, "--force"))
    assert code == 0, err
    assert len(pd.read_csv(files / "out.csv")) > 0


def test_existing_budget_file_refused_before_fit(files, capsys):
    (files / "out.csv.budget.json").write_text("{}")
    code, _, err = run(capsys, synth_args(files))
    assert code == 2 and "out.csv.budget.json" in err and "fitting" not in err
    assert not (files / "out.csv").exists()


def test_output_equal_to_input_refused(files, capsys):
    before = (files / "data.csv").read_bytes()
    args = synth_args(files, "--force", out="data.csv")
    args[args.index("-o") + 1] = str(files / "sub" / ".." / "data.csv")
    code, _, err = run(capsys, args)
    assert code == 2 and "input" in err
    assert (files / "data.csv").read_bytes() == before


def test_unknown_extension_refused_for_input_and_output(files, capsys):
    (files / "data.xlsx").write_bytes(b"PK\x03\x04")
    code, _, err = run(capsys, synth_args(files, data="data.xlsx"))
    assert code == 2 and ".xlsx" in err and "CSV" in err
    code, _, err = run(capsys, synth_args(files, out="release.xlsx"))
    assert code == 2 and ".xlsx" in err
    assert not (files / "release.xlsx").exists()


def test_without_a_schema_every_column_is_read_as_text(tmp_path):
    """One person's "unknown" among dates or "30.5" among ages must not change how the other columns are read."""
    text = "age,when,score\n18,2021-09-01,1.5\n,2021-09-02,\n30,2021-09-03,2\n"
    for extra in ("", "30.5,unknown,n/a\n"):
        (tmp_path / "t.csv").write_text(text + extra)
        frame = read_table(tmp_path / "t.csv")
        assert all(frame[c].dtype == object for c in frame.columns)
        assert frame["age"].iloc[[0, 2]].tolist() == ["18", "30"] and frame["age"].isna().tolist()[:3] == [0, 1, 0]
    pd.DataFrame({"age": pd.array([18, None, 30], dtype="Int64"), "x": [1.5, np.nan, 2.0],
                  "when": pd.to_datetime(["2021-09-01", None, "2021-09-03"])}).to_parquet(tmp_path / "t.parquet")
    frame = read_table(tmp_path / "t.parquet")
    assert all(frame[c].dtype == object for c in frame.columns) and frame.isna().sum().tolist() == [1, 1, 1]
    assert frame["age"].tolist()[0] == "18" and frame["x"].tolist()[0] == "1.5"


def test_nullable_integers_and_booleans_keep_their_kind(tmp_path):
    (tmp_path / "t.csv").write_text("age,flag,x\n18,True,1.5\n,,2.0\n30,False,\n")
    plain = read_table(tmp_path / "t.csv", infer=True)  # a raw draft's or an audit's reading
    assert str(plain["age"].dtype) == "Int64" and str(plain["flag"].dtype) == "boolean"
    assert plain["x"].dtype == np.float64
    schema = TableSchema.from_dict({"age": {"kind": "integer", "lower": 0, "upper": 99},
                                    "flag": {"kind": "boolean"}, "x": {"kind": "continuous", "lower": 0, "upper": 9}})
    typed = read_table(tmp_path / "t.csv", schema=schema)
    assert str(typed["age"].dtype) == "Int64" and str(typed["flag"].dtype) == "boolean"


def test_schema_kinds_parse_datetimes_and_keep_text_codes(tmp_path):
    (tmp_path / "t.csv").write_text("when,code\n2021-09-01T08:00:00+02:00,01\n2021-09-02T09:30:00+02:00,02\n")
    schema = TableSchema.from_dict({"when": {"kind": "datetime", "lower": "2021-01-01", "upper": "2022-01-01"},
                                    "code": {"kind": "categorical", "categories": ["01", "02"]}})
    t = read_table(tmp_path / "t.csv", schema=schema)
    assert str(t["when"].dt.tz) == "UTC+02:00"
    assert t["code"].tolist() == ["01", "02"]


def test_release_keeps_nullable_integer_dtype(tmp_path, capsys):
    rng = np.random.default_rng(0)
    age = pd.array(rng.integers(17, 40, N), dtype="Int64")
    age[3] = pd.NA
    pd.DataFrame({"age": age, "course": rng.choice(["a", "b"], N)}).to_csv(tmp_path / "d.csv", index=False)
    TableSchema.from_dict({"age": {"kind": "integer", "lower": 17, "upper": 70},
                           "course": {"kind": "categorical", "categories": ["a", "b"]}}).to_json(tmp_path / "s.json")
    code = main(["synthesize", str(tmp_path / "d.csv"), "--method", "marginals", "--epsilon", "5", "--schema",
                 str(tmp_path / "s.json"), "-o", str(tmp_path / "r.parquet")])
    assert code == 0, capsys.readouterr().err
    assert str(pd.read_parquet(tmp_path / "r.parquet")["age"].dtype) == "Int64"


# --------------------------------------------------------------------------- epsilon, schema, sizes
def test_epsilon_not_a_number(files, capsys):
    args = synth_args(files)
    args[args.index("--epsilon") + 1] = "abc"
    code, _, err = run(capsys, args)
    assert code == 2 and "'abc' is not a number" in err and "'none'" in err


def test_epsilon_none_is_a_declared_nonprivate_run_with_valid_json(files, capsys):
    args = synth_args(files)
    args[args.index("--epsilon") + 1] = "none"
    code, out, err = run(capsys, args)
    assert code == 0, err
    assert "NON-private" in err and "NOT differentially private" in out
    record = _strict((files / "out.csv.budget.json").read_text())
    assert record["privacy_spent"]["epsilon"] == "inf"
    assert record["privacy_spent"]["is_private"] is False and record["privacy_spent"]["publishable"] is False


def test_non_private_run_without_schema_keeps_numeric_columns_numeric(files, capsys):
    args = synth_args(files, "--n-samples", "50", schema=False)
    args[args.index("--epsilon") + 1] = "none"  # no privacy to protect: pandas may read the kinds from the values
    code, out, err = run(capsys, args)
    assert code == 0 and "NOT differentially private" in out, err
    release = pd.read_csv(files / "out.csv")
    assert release["score"].dtype == np.float64 and release["course"].dtype == object


def test_budget_record_content(files, capsys):
    code, out, err = run(capsys, synth_args(files))
    assert code == 0, err
    record = _strict((files / "out.csv.budget.json").read_text())
    spent = record["privacy_spent"]
    assert spent["is_private"] and spent["publishable"] and not spent["reproducible_noise"]
    assert 0 < spent["epsilon"] <= 2
    assert record["method"] == "marginals" and record["params"]["n_bins"] == 32
    assert record["n_samples_dp_estimate"] is True
    assert record["n_samples"] == len(pd.read_csv(files / "out.csv"))
    assert "DP estimate" in err


def test_missing_and_malformed_schema_name_the_file(files, capsys):
    args = synth_args(files)
    args[args.index("--schema") + 1] = str(files / "nope.json")
    code, _, err = run(capsys, args)
    assert code == 2 and "nope.json" in err and "does not exist" in err
    (files / "bad.json").write_text('{"columns": {"score": {"kind": "continuous",}}')
    args[args.index("--schema") + 1] = str(files / "bad.json")
    code, _, err = run(capsys, args)
    assert code == 2 and "bad.json" in err and "not valid JSON" in err and "line 1" in err
    (files / "wrong.json").write_text('{"columns": {"score": {"kind": "number"}}}')
    args[args.index("--schema") + 1] = str(files / "wrong.json")
    code, _, err = run(capsys, args)
    assert code == 2 and "wrong.json" in err and "not a valid schema" in err


@pytest.mark.parametrize("n", ["0", "-3", "ten"])
def test_n_samples_must_be_positive(files, capsys, n):
    code, _, err = run(capsys, synth_args(files, "--n-samples", n))
    assert code == 2 and "--n-samples" in err


def test_n_samples_note_does_not_depend_on_the_number_of_people(files, capsys):
    """The note about --n-samples is said for every size: saying it only at the exact size would reveal that size."""
    errs = []
    for n, out in ((N, "a.csv"), (N + 1, "b.csv")):
        code, _, err = run(capsys, synth_args(files, "--n-samples", str(n), out=out))
        assert code == 0, err
        errs.append(_mask(err.replace(out, "OUT")))
    assert errs[0] == errs[1] and "number of people would reveal" in errs[0]
    assert _strict((files / "a.csv.budget.json").read_text())["n_samples_dp_estimate"] is False


def test_absurd_release_size_is_refused_before_anything_unless_forced(files, capsys, monkeypatch):
    import skdpsynth._synthesize as synthesize

    code, _, err = run(capsys, synth_args(files, "--n-samples", "1000000000"))
    assert code == 2 and "1,000,000,000" in err and "--force" in err and "fitting" not in err
    assert sorted(p.name for p in files.iterdir()) == ["data.csv", "schema.json"]
    monkeypatch.setattr(synthesize, "MAX_ROWS", 100)
    code, out, err = run(capsys, synth_args(files, "--n-samples", "150", "--force"))
    assert code == 0 and "wrote 150 synthetic rows" in out and "sampling 150 rows" in err


def test_interrupted_sampling_leaves_no_partial_file_but_the_budget_record(files, capsys, monkeypatch):
    def interrupted(self, n, **kw):
        yield self.sample(10)
        raise KeyboardInterrupt

    monkeypatch.setattr(DPMarginalsSynthesizer, "sample_batches", interrupted)
    code, _, err = run(capsys, synth_args(files, "--n-samples", "5000"))
    assert code == 130 and "interrupted" in err and "budget record written" in err
    assert sorted(p.name for p in files.iterdir()) == ["data.csv", "out.csv.budget.json", "schema.json"]
    record = _strict((files / "out.csv.budget.json").read_text())
    assert record["release"] is None and "no release" in record["status"] and record["privacy_spent"]["epsilon"] > 0


def test_terminated_run_leaves_no_partial_file(files):
    """SIGTERM (a scheduler's time limit) during a long release: the hidden partial file is removed."""
    import signal

    args = synth_args(files, "--n-samples", "50000000", "--force", out="big.csv")
    proc = subprocess.Popen([sys.executable, "-m", "skdpsynth.cli", *args], stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        if "sampling" in line:
            break
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "interrupted" in err
    assert sorted(p.name for p in files.iterdir()) == ["big.csv.budget.json", "data.csv", "schema.json"]


def test_csv_and_parquet_releases_get_their_own_budget_records(files, capsys):
    for out in ("o.csv", "o.parquet"):
        code, _, err = run(capsys, synth_args(files, out=out))
        assert code == 0, err
    for out in ("o.csv", "o.parquet"):
        record = _strict((files / f"{out}.budget.json").read_text())
        assert record["release"]["file"] == out
        assert record["release"]["sha256"] == hashlib.sha256((files / out).read_bytes()).hexdigest()


def test_a_file_that_appears_during_the_run_is_not_overwritten(files, capsys, monkeypatch):
    original = DPMarginalsSynthesizer.sample_batches

    def racing(self, n, **kw):
        (files / "out.csv").write_text("keep me\n")  # someone else writes the output meanwhile
        return original(self, n, **kw)

    monkeypatch.setattr(DPMarginalsSynthesizer, "sample_batches", racing)
    code, _, err = run(capsys, synth_args(files))
    assert code == 2 and "appeared" in err and (files / "out.csv").read_text() == "keep me\n"
    assert not [p for p in files.iterdir() if p.name.endswith(".partial")]


def test_reproducible_noise_needs_seed_and_is_not_publishable(files, capsys):
    code, _, err = run(capsys, synth_args(files, "--reproducible-noise"))
    assert code == 2 and "--seed" in err
    code, out, err = run(capsys, synth_args(files, "--reproducible-noise", "--seed", "3"))
    assert code == 0, err
    assert "NOT publishable" in err and "NOT publishable" in out
    spent = _strict((files / "out.csv.budget.json").read_text())["privacy_spent"]
    assert spent["reproducible_noise"] is True and spent["publishable"] is False


def test_unconfirmed_draft_schema_is_refused_before_anything_is_spent(files, capsys):
    d = student_schema().to_dict()
    d["public"] = False
    (files / "schema.json").write_text(json.dumps(d))
    code, out, err = run(capsys, synth_args(files))
    assert code == 2 and "not confirmed" in err and "Nothing was read or spent" in err and "fitting" not in err
    assert f"skdpsynth schema confirm {files / 'schema.json'} -o confirmed.json" in err
    assert sorted(p.name for p in files.iterdir()) == ["data.csv", "schema.json"]
    args = synth_args(files)
    args[args.index("--epsilon") + 1] = "none"  # a NON-private run may use a draft
    code, out, err = run(capsys, args)
    assert code == 0 and "NOT differentially private" in out, err


def test_raw_draft_with_a_hand_flipped_public_true_is_refused(files, capsys):
    code, _, err = run(capsys, ["schema", "draft", str(files / "data.csv"), "--raw", "-o", str(files / "d.json")])
    assert code == 0, err
    d = json.loads((files / "d.json").read_text())
    d["public"] = True
    (files / "schema.json").write_text(json.dumps(d))
    code, _, err = run(capsys, synth_args(files))
    assert code == 2 and "marked raw" in err and "--accept" in err and "fitting" not in err
    assert not (files / "out.csv").exists() and not (files / "out.csv.budget.json").exists()


def test_without_schema_refusal_names_the_draft_command_and_leaves_the_budget_record(files, capsys):
    code, _, err = run(capsys, synth_args(files, "--epsilon", "0.05", schema=False))
    assert code == 2
    assert "skdpsynth schema draft" in err and "schema confirm draft.json -o schema.json" in err
    record = _strict((files / "out.csv.budget.json").read_text())  # the noisy count was spent: it is on record
    assert record["release"] is None and 0 < record["privacy_spent"]["epsilon"] <= 0.05
    assert f"budget record written to {files / 'out.csv.budget.json'}" in err and not (files / "out.csv").exists()


def test_draft_hint_is_said_once_in_command_line_words(files, capsys):
    """The domain estimate's refusal carries the advice: the command line says it once, for this file, in CLI words."""
    code, _, err = run(capsys, synth_args(files, schema=False))
    assert code == 2 and "domain cannot be estimated" in err
    assert err.count("schema draft") == 1, err
    assert f"skdpsynth schema draft {files / 'data.csv'} --raw -o draft.json" in err and "--schema schema.json" in err
    assert "DATA" not in err and "schema=schema.json" not in err and "TableSchema.draft" not in err


def test_draft_hint_once_after_the_domain_warning(files, capsys, monkeypatch):
    """A domain-estimate warning that gave the advice, then a refusal of the model: the advice still appears once."""
    import warnings

    from skdpsynth.exceptions import PrivacyBudgetError
    from skdpsynth.privacy._domain import DRAFT_COMMAND

    def fit(self, X, y=None, **params):
        warnings.warn(f"DP domain estimate: values outside the domain are clipped (`{DRAFT_COMMAND}` drafts one).",
                      UserWarning, stacklevel=2)
        raise PrivacyBudgetError("no budget left for the model after the domain estimate.")

    monkeypatch.setattr(DPMarginalsSynthesizer, "fit", fit)
    code, _, err = run(capsys, synth_args(files, schema=False))
    assert code == 2 and "no budget left for the model" in err
    assert err.count("schema draft") == 1, err
    assert f"skdpsynth schema draft {files / 'data.csv'} --raw -o draft.json" in err  # the warning names the file too


def test_sampling_in_batches(files, capsys, monkeypatch):
    import skdpsynth._synthesize as synthesize

    monkeypatch.setattr(synthesize, "BATCH_CELLS", 5_000)  # 1000 rows per batch
    calls = []
    original = DPMarginalsSynthesizer.sample_batches

    def spy(self, n, **kw):
        calls.append(kw["batch_size"])
        return original(self, n, **kw)

    monkeypatch.setattr(DPMarginalsSynthesizer, "sample_batches", spy)
    for out in ("big.csv", "big2.parquet"):
        code, _, err = run(capsys, synth_args(files, "--n-samples", "2500", out=out))
        assert code == 0, err
    assert calls == [1000, 1000]
    assert len(pd.read_csv(files / "big.csv")) == 2500 and len(pd.read_parquet(files / "big2.parquet")) == 2500


def test_non_private_method_needs_epsilon_none(files, capsys):
    code, _, err = run(capsys, ["synthesize", str(files / "data.csv"), "--method", "tvae", "--epsilon", "1",
                                "-o", str(files / "o.csv")])
    assert code == 2 and "not differentially private" in err


# --------------------------------------------------------------------------- exit codes and the handler
def test_internal_failure_is_exit_3_without_traceback(files, capsys, monkeypatch):
    def boom(self, X, ctx):
        raise RuntimeError("boom")

    monkeypatch.setattr(DPMarginalsSynthesizer, "_fit_table", boom)
    code, _, err = run(capsys, synth_args(files))
    assert code == 3 and "internal error" in err and "RuntimeError: boom" in err and "Traceback" not in err
    assert not (files / "out.csv").exists()
    assert _strict((files / "out.csv.budget.json").read_text())["release"] is None  # the clip count was spent
    assert "budget record written" in err
    code, _, err = run(capsys, synth_args(files, "--debug", "--force"))
    assert code == 3 and "Traceback" in err


def test_a_broken_import_is_internal_but_a_missing_extra_is_set_up(files, capsys, monkeypatch):
    """Only an ImportError naming an optional package (an extra to install) is exit 2; any other is a bug."""
    def broken(self, X, ctx):
        raise ImportError("cannot import name 'gone' from 'skdpsynth.synthesizers._engine'",
                          name="skdpsynth.synthesizers._engine")

    monkeypatch.setattr(DPMarginalsSynthesizer, "_fit_table", broken)
    code, _, err = run(capsys, synth_args(files))
    assert code == 3 and "internal error" in err and "ImportError" in err

    def no_torch(self, X, ctx):
        raise ImportError('DPMarginalsSynthesizer needs \'torch\', which is not installed: pip install '
                          '"skdpsynth[deep]"', name="torch")

    monkeypatch.setattr(DPMarginalsSynthesizer, "_fit_table", no_torch)
    code, _, err = run(capsys, synth_args(files, "--force"))
    assert code == 2 and "internal error" not in err and 'skdpsynth[deep]' in err


def test_debug_shows_traceback_of_bad_input(files, capsys):
    code, _, err = run(capsys, synth_args(files, "--debug", data="missing.csv"))
    assert code == 2 and "Traceback" in err and "skdpsynth: error:" in err
    code, _, err = run(capsys, ["--debug"] + synth_args(files, data="missing.csv"))
    assert code == 2 and "Traceback" in err


def test_usage_errors_are_exit_2(capsys):
    code, _, err = run(capsys, ["synthesize"])
    assert code == 2 and "skdpsynth: error:" in err
    code, _, err = run(capsys, ["datasets", "fetch"])
    assert code == 2 and "needs a dataset name" in err


class _ClosedPipe(io.StringIO):
    def write(self, s):
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self):
        raise BrokenPipeError(32, "Broken pipe")


def test_broken_pipe_is_silent(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    assert main(["datasets", "list"]) == 0
    assert capsys.readouterr().err == ""


# --------------------------------------------------------------------------- audit
@pytest.fixture
def audit_files(files):
    """Train, holdout, an oracle release (fresh draws) and a hand-written budget record stating a DP guarantee."""
    make_students(400, 1).to_csv(files / "holdout.csv", index=False)
    make_students(400, 2).to_csv(files / "release.csv", index=False)
    (files / "stated.budget.json").write_text(json.dumps({"method": "marginals", "privacy_spent": {
        "epsilon": 1.0, "delta": 0.0, "is_private": True, "publishable": True, "reproducible_noise": False}}))
    return files


def audit_args(d: Path, *extra: str) -> list[str]:
    return ["audit", "--train", str(d / "data.csv"), "--holdout", str(d / "holdout.csv"), "--synthetic",
            str(d / "release.csv"), "--target", "outcome", "--schema", str(d / "schema.json"), *extra]


@pytest.mark.parametrize("option, value, message", [
    ("--target", "outcom", "'outcom' is not a column of --train"),
    ("--protected", "Group", "'Group' is not a column of --train"),
    ("--positive", "dropuot", "'dropuot' is not a class of --target 'outcome'"),
])
def test_audit_misspelled_names(audit_files, capsys, option, value, message):
    args = audit_args(audit_files, "--protected", "group")
    if option == "--target":
        args[args.index("--target") + 1] = value
    elif option == "--protected":
        args[args.index("--protected") + 1] = value
    else:
        args += ["--positive", value]
    code, _, err = run(capsys, args)
    assert code == 2 and message in err and "Did you mean" in err


def test_audit_json_is_strict_and_verdict_exit_codes(audit_files, capsys):
    stated = ["--budget", str(audit_files / "stated.budget.json"), "--ledger", str(audit_files / "l.jsonl")]
    code, out, err = run(capsys, audit_args(audit_files, "--json", *stated))
    assert code == 0, err + out
    assert _strict(out)["approved"] is True
    make_students(N, 0).to_csv(audit_files / "release.csv", index=False)  # a copy of the training rows
    code, out, err = run(capsys, audit_args(audit_files, *stated))
    assert code == 1 and "REJECTED" in out
    code, out, _ = run(capsys, ["audit", "--verify-ledger", str(audit_files / "l.jsonl")])
    assert code == 0 and "2 entries" in out
    lines = (audit_files / "l.jsonl").read_text().splitlines()
    lines[0] = lines[0].replace('"approved":true', '"approved":false')
    (audit_files / "l.jsonl").write_text("\n".join(lines) + "\n")
    code, out, _ = run(capsys, ["audit", "--verify-ledger", str(audit_files / "l.jsonl")])
    assert code == 1 and "BROKEN" in out and "line 1" in out
    code, _, err = run(capsys, audit_args(audit_files, "--ledger", str(audit_files / "l.jsonl")))
    assert code == 2 and "broken" in err and "nothing was audited" in err


@pytest.mark.requires("matplotlib")  # the audit writes its report with figures
def test_audit_reads_budget_and_refuses_another_release(audit_files, capsys):
    code, _, err = run(capsys, synth_args(audit_files, "--force", out="release.csv"))
    assert code == 0, err
    code, out, err = run(capsys, audit_args(audit_files, "--json", "--budget",
                                            str(audit_files / "release.csv.budget.json")))
    assert code in (0, 1), err
    import inspect

    from skdpsynth.audit import ReleaseAuditor

    if "privacy" in inspect.signature(ReleaseAuditor.audit).parameters:  # the auditor records the stated spend
        assert _strict(out)["privacy"]["epsilon"] == 2.0
    # an audit of a file names the synthesizer from its budget record (it used to say None)
    code, _, err = run(capsys, audit_args(audit_files, "--budget", str(audit_files / "release.csv.budget.json"),
                                          "--report", str(audit_files / "named")))
    assert code in (0, 1), err
    synth_line = [ln for ln in (audit_files / "named" / "report.md").read_text().splitlines()
                  if ln.startswith("- synthesizer:")]
    assert synth_line and "Synthesizer` (from the budget record)" in synth_line[0]
    make_students(400, 3).to_csv(audit_files / "release.csv", index=False)
    code, _, err = run(capsys, audit_args(audit_files, "--budget", str(audit_files / "release.csv.budget.json")))
    assert code == 2 and "another release" in err


def test_audit_report_folder_not_overwritten(audit_files, capsys):
    (audit_files / "rep").mkdir()
    (audit_files / "rep" / "notes.txt").write_text("mine")
    code, _, err = run(capsys, audit_args(audit_files, "--report", str(audit_files / "rep")))
    assert code == 2 and "not empty" in err
    code, _, err = run(capsys, audit_args(audit_files, "--ledger", str(audit_files)))
    assert code == 2 and "is a folder" in err


def test_audit_without_inputs(capsys):
    code, _, err = run(capsys, ["audit", "--target", "y"])
    assert code == 2 and "--train" in err


def test_audit_shared_train_and_holdout_rows_are_bad_input(audit_files, capsys):
    import inspect

    from skdpsynth.audit import ReleaseAuditor

    if "allow_shared_rows" not in inspect.signature(ReleaseAuditor.audit).parameters:
        pytest.skip("the auditor does not check train/holdout overlap yet")
    make_students(N, 0).to_csv(audit_files / "holdout.csv", index=False)
    code, _, err = run(capsys, audit_args(audit_files))
    assert code == 2 and "skdpsynth: error:" in err and "shares rows" in err


def test_broken_pipe_during_audit_keeps_the_verdict(audit_files, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    assert main(audit_args(audit_files, "--json", "--budget", str(audit_files / "stated.budget.json"))) == 0
    assert "error" not in capsys.readouterr().err


# --------------------------------------------------------------------------- schema draft
def test_schema_draft_needs_epsilon_or_raw_and_refuses_to_overwrite(files, capsys):
    draft = ["schema", "draft", str(files / "data.csv"), "-o"]
    code, _, err = run(capsys, draft + [str(files / "d.json")])
    assert code == 2 and "--epsilon" in err and "--raw" in err and not (files / "d.json").exists()
    code, _, err = run(capsys, draft + [str(files / "d.json"), "--raw", "--epsilon", "1"])
    assert code == 2 and "not both" in err
    (files / "taken.json").write_text("{}")
    code, _, err = run(capsys, draft + [str(files / "taken.json"), "--raw"])
    assert code == 2 and "already exists" in err and (files / "taken.json").read_text() == "{}"


def test_raw_draft_is_marked_and_confirm_takes_each_entry_by_name(files, capsys):
    code, out, err = run(capsys, ["schema", "draft", str(files / "data.csv"), "--raw", "-o", str(files / "d.json")])
    assert code == 0, err
    assert "identify people" in err and "--epsilon" in err and "RAW DRAFT" in out and "Check before use" in out
    drafted = TableSchema.from_json(files / "d.json")
    raw = {"score.bounds", "attendance.bounds", "course.categories", "group.categories", "outcome.categories"}
    assert drafted.public is False and drafted.raw == raw
    confirm = ["schema", "confirm", str(files / "d.json"), "-o", str(files / "c.json")]
    code, _, err = run(capsys, confirm + ["--accept", "score.bounds"])
    assert code == 2 and "identify people" in err and "--accept attendance.bounds" in err
    assert not (files / "c.json").exists()
    code, _, err = run(capsys, confirm + ["--accept", "age.bounds"])
    assert code == 2 and "cannot accept ['age.bounds']" in err
    code, out, err = run(capsys, confirm + [arg for m in sorted(raw) for arg in ("--accept", m)])
    assert code == 0, err
    confirmed = TableSchema.from_json(files / "c.json")
    assert confirmed.public and not confirmed.raw and "accepted as read from the data" in out
    code, _, err = run(capsys, confirm)
    assert code == 2 and "already exists" in err


def test_dp_draft_writes_its_budget_record_and_confirms_without_accepting(files, capsys):
    # text columns only: their kind is categorical whether read from the dtype or decided under DP
    make_students(N, 0)[["course", "group", "outcome"]].to_csv(files / "cats.csv", index=False)
    code, out, err = run(capsys, ["schema", "draft", str(files / "cats.csv"), "--epsilon", "4", "-o",
                                  str(files / "d.json")])
    assert code == 0, err
    assert "estimated under differential privacy" in out and "d.json.budget.json" in out
    drafted = TableSchema.from_json(files / "d.json")
    # "(other)": the documented place of categories too rare to release (art, 62 of 300, is now and then)
    assert not drafted.public and not drafted.raw
    assert set(drafted["course"].categories) <= {"math", "bio", "art", "(other)"}
    record = _strict((files / "d.json.budget.json").read_text())
    assert 0 < record["privacy_spent"]["epsilon"] <= 4 and record["privacy_spent"]["is_private"]
    assert record["budget_log"] and record["schema"]["file"] == "d.json"
    assert record["schema"]["sha256"] == hashlib.sha256((files / "d.json").read_bytes()).hexdigest()
    code, _, err = run(capsys, ["schema", "confirm", str(files / "d.json"), "-o", str(files / "c.json")])
    assert code == 0, err
    assert TableSchema.from_json(files / "c.json").public


def test_dp_draft_that_refuses_after_spending_leaves_its_budget_record(files, capsys):
    code, _, err = run(capsys, ["schema", "draft", str(files / "data.csv"), "--epsilon", "0.01", "-o",
                                str(files / "d.json")])
    assert code == 2 and "budget record written" in err and not (files / "d.json").exists()
    assert f"schema draft {files / 'data.csv'} --raw -o draft.json" in err and "schema=schema.json" not in err
    record = _strict((files / "d.json.budget.json").read_text())
    assert record["schema"] is None and 0 < record["privacy_spent"]["epsilon"] <= 0.01


# --------------------------------------------------------------------------- helpers
def test_json_never_contains_infinity_or_nan():
    text = dumps_json({"a": float("inf"), "b": float("nan"), "c": [np.float64("-inf")], "d": pd.NA})
    assert _strict(text) == {"a": "inf", "b": None, "c": ["-inf"], "d": None}


def test_failed_write_leaves_no_file(tmp_path):
    check_output(tmp_path / "x.csv")
    with pytest.raises(RuntimeError), TableWriter(tmp_path / "x.csv") as w:
        w.write(pd.DataFrame({"a": [1]}))
        raise RuntimeError
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(InputError, match="must end in .json"):
        check_output(tmp_path / "x.txt", kind="json")


def test_subprocess_smoke(files):
    env = {**os.environ, "PYTHONWARNINGS": "default"}
    ok = subprocess.run([sys.executable, "-m", "skdpsynth.cli", *synth_args(files, "--n-samples", "50")],
                        capture_output=True, text=True, env=env, timeout=300)
    assert ok.returncode == 0, ok.stderr
    assert "wrote 50 synthetic rows" in ok.stdout and "Traceback" not in ok.stderr
    # a refusal as a process (exit code 2, no traceback) is checked on a cheap one: the CLI refuses before fitting
    bad = subprocess.run([sys.executable, "-m", "skdpsynth.cli", *synth_args(files)], capture_output=True, text=True,
                         env=env, timeout=300)
    assert bad.returncode == 2 and bad.stderr.strip().endswith("or choose another name.")
    assert "Traceback" not in bad.stderr
