"""Tests of the real-data loaders, their public schemas and the path / cache / download logic.

No test downloads anything from the internet: real data come from ``shared/data`` (the
``data_dir`` fixture), and the download code path is exercised with local ``file://`` URLs.
"""

from __future__ import annotations

import dataclasses
import io
import shutil
import zipfile

import numpy as np
import pandas as pd
import pytest

from skdpsynth import TableSchema
from skdpsynth.datasets import (
    DatasetNotFoundError,
    adult_schema,
    fetch_dataset,
    get_data_home,
    list_datasets,
    load_adult,
    load_dataset,
    load_oulad,
    load_uci_dropout,
    load_uci_hesp,
    oulad_student_info_schema,
    uci_dropout_schema,
    uci_hesp_schema,
)
from skdpsynth.datasets._fetch import DATASETS, _Source
from skdpsynth.exceptions import SchemaError

realdata = pytest.mark.realdata


# ----------------------------------------------------------------------------- Adult
@realdata
def test_load_adult(data_dir):
    b = load_adult(path=data_dir / "adult", download=False)
    assert b.frame.shape == (48_842, 15)
    assert len(b.train) == 32_561 and len(b.test) == 16_281
    assert b.target == "income"
    assert b.train["income"].value_counts().to_dict() == {"<=50K": 24_720, ">50K": 7_841}
    # test labels lose their trailing "."
    assert b.test["income"].value_counts().to_dict() == {"<=50K": 12_435, ">50K": 3_846}
    assert int(b.train.isna().sum().sum()) == 4_262
    assert int(b.test.isna().sum().sum()) == 2_203
    assert set(b.train.columns[b.train.isna().any()]) == {"workclass", "occupation", "native-country"}
    assert b.protected == ["sex", "race"]
    assert isinstance(b.schema, TableSchema) and b.schema.public
    out = b.schema.validate(b.frame, clip=False)  # the documented domain accepts the real data unclipped
    assert out.shape == b.frame.shape


@realdata
def test_load_adult_single_file(data_dir, tmp_path):
    shutil.copy(data_dir / "adult" / "adult.test", tmp_path / "adult.test")
    b = load_adult(path=tmp_path / "adult.test", download=False)
    assert len(b.train) == 0 and len(b.test) == 16_281
    assert set(b.frame["income"]) == {"<=50K", ">50K"}


@realdata
def test_adult_schema_matches_names_file(data_dir):
    """Every category list in the schema equals the one in adult.names (the codebook)."""
    schema = adult_schema()
    for line in (data_dir / "adult" / "adult.names").read_text().splitlines():
        if ":" in line and not line.startswith("|"):
            name, rest = line.split(":", 1)
            rest = rest.strip().rstrip(".")
            if name in schema and rest != "continuous":
                assert schema[name].categories == tuple(c.strip() for c in rest.split(",")), name
    assert schema["income"].categories == ("<=50K", ">50K")


# ----------------------------------------------------------------------------- UCI dropout
@realdata
def test_load_uci_dropout(data_dir):
    b = load_uci_dropout(path=data_dir / "uci_dropout", download=False)
    assert b.frame.shape == (4_424, 37)
    assert b.target == "Target"
    assert "Daytime/evening attendance" in b.frame.columns  # header TAB stripped
    assert b.frame["Target"].value_counts().to_dict() == {"Graduate": 2_209, "Dropout": 1_421, "Enrolled": 794}
    assert b.frame.notna().all().all()
    b.schema.validate(b.frame, clip=False)
    assert set(b.protected) <= set(b.frame.columns)
    assert b.codebook["Course"][9119] == "Informatics Engineering"
    # path may be the file itself
    b2 = load_uci_dropout(path=data_dir / "uci_dropout" / "data.csv", download=False)
    pd.testing.assert_frame_equal(b.frame, b2.frame)


# ----------------------------------------------------------------------------- UCI HESP
@realdata
def test_load_uci_hesp(data_dir):
    b = load_uci_hesp(path=data_dir / "uci_hesp", download=False)
    assert b.frame.shape == (145, 32)
    assert "STUDENT ID" not in b.frame.columns and len(b.ids) == 145 and b.ids.is_unique
    assert b.target == "GRADE"
    assert b.frame["GRADE"].value_counts().sort_index().to_dict() == {
        0: 8, 1: 35, 2: 24, 3: 21, 4: 10, 5: 17, 6: 13, 7: 17}
    assert b.target_names[0] == "Fail" and b.target_names[-1] == "AA"
    b.schema.validate(b.frame, clip=False)
    assert b.column_descriptions["17"] == "Weekly study hours"


# ----------------------------------------------------------------------------- OULAD
_OULAD_CACHE: dict = {}


@pytest.fixture
def oulad(data_dir):
    """OULAD loaded once per test session (loading takes a few seconds)."""
    if "b" not in _OULAD_CACHE:
        _OULAD_CACHE["b"] = load_oulad(path=data_dir / "oulad", download=False)
    return _OULAD_CACHE["b"]


@realdata
def test_load_oulad_student_info(oulad):
    b = oulad
    assert b.frame.shape == (32_593, 11)
    assert "id_student" not in b.frame.columns and len(b.ids) == 32_593
    assert b.target == "final_result"
    assert b.frame["final_result"].value_counts().to_dict() == {
        "Pass": 12_361, "Withdrawn": 10_156, "Fail": 7_052, "Distinction": 3_024}
    assert int(b.frame["imd_band"].isna().sum()) == 1_111
    assert "10-20" not in set(b.frame["imd_band"].dropna())  # normalised to the documented "10-20%"
    b.schema.validate(b.frame, clip=False)
    assert {"gender", "disability", "imd_band"} <= set(b.protected)
    assert b.cohorts == ["2013B", "2013J", "2014B", "2014J"]
    shapes = {k: v.shape for k, v in b.tables.items()}
    assert shapes == {"studentInfo": (32_593, 12), "courses": (22, 3), "assessments": (206, 6), "vle": (6_364, 6),
                      "studentRegistration": (32_593, 5), "studentAssessment": (173_912, 5)}


@realdata
def test_load_oulad_clickstream(oulad):
    cs = oulad.clickstream
    assert list(cs.columns) == ["id_student", "code_module", "code_presentation", "date", "activity_type",
                                "sum_click", "final_result"]
    assert len(cs) == 350_298
    assert oulad.clickstream_modules == ["AAA"]
    assert cs.notna().all().all()  # every id_site is in vle.csv, every learner in studentInfo
    assert set(cs["activity_type"]) <= set(oulad.tables["vle"]["activity_type"])
    assert int(cs["sum_click"].sum()) > 0
    # sorted by learner then date
    key = pd.factorize(cs["code_presentation"])[0].astype(np.int64) * 10**10 + cs["id_student"].to_numpy()
    same = key[1:] == key[:-1]
    assert (~same).sum() + 1 == len(np.unique(key))  # each learner's events are contiguous
    assert (np.diff(cs["date"].to_numpy())[same] >= 0).all()
    # final_result agrees with studentInfo
    info = oulad.tables["studentInfo"].set_index(["code_module", "code_presentation", "id_student"])["final_result"]
    joined = info.reindex(pd.MultiIndex.from_frame(cs[["code_module", "code_presentation", "id_student"]]))
    assert (joined.to_numpy() == cs["final_result"].to_numpy()).all()
    assert oulad.weekly.shape == (627_031, 7)
    assert int(oulad.weekly["sum_click"].sum()) == 39_605_099


@realdata
def test_load_oulad_module_filter(data_dir):
    b = load_oulad(path=data_dir / "oulad", download=False, module="AAA")
    assert set(b.frame["code_module"]) == {"AAA"}
    assert len(b.frame) == 748
    assert b.cohorts == ["2013J", "2014J"]
    assert set(b.clickstream["code_module"]) == {"AAA"}
    assert set(b.weekly["code_module"]) == {"AAA"}
    assert set(b.tables["vle"]["code_module"]) == {"AAA"}
    assert b.tables["studentAssessment"]["id_assessment"].isin(b.tables["assessments"]["id_assessment"]).all()
    b.schema.validate(b.frame, clip=False)
    light = load_oulad(path=data_dir / "oulad", module=["AAA", "BBB"], with_clickstream=False)
    assert light.clickstream is None and light.weekly is None
    assert set(light.frame["code_module"]) == {"AAA", "BBB"}
    with pytest.raises(ValueError, match="module"):
        load_oulad(path=data_dir / "oulad", module="XYZ")


# ----------------------------------------------------------------------------- schemas are public
@realdata
def test_schemas_do_not_depend_on_the_data(data_dir):
    """Loading a few rows yields exactly the same schema: nothing is read from the data."""
    full = load_uci_dropout(path=data_dir / "uci_dropout")
    assert full.schema == uci_dropout_schema()
    assert load_uci_hesp(path=data_dir / "uci_hesp").schema == uci_hesp_schema()
    assert oulad_student_info_schema() == oulad_student_info_schema()
    # documented codes that the data never use are still in the domain
    assert 6 in uci_hesp_schema()["15"].categories
    assert not (full.frame["Marital status"] == 99).any()
    assert set(uci_dropout_schema()["Course"].categories) >= set(full.frame["Course"])


def test_schema_rejects_undocumented_values():
    bad = pd.DataFrame({c: ["?"] for c in uci_dropout_schema().names})
    with pytest.raises(SchemaError):
        uci_dropout_schema().validate(bad)


# ----------------------------------------------------------------------------- path / cache / download
@realdata
def test_cache_is_used_without_download(data_dir, tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / "uci_dropout").mkdir(parents=True)
    shutil.copy(data_dir / "uci_dropout" / "data.csv", home / "uci_dropout" / "data.csv")
    b = load_uci_dropout(data_home=home, download=False)
    assert b.frame.shape == (4_424, 37)
    # the environment variable is the default cache
    monkeypatch.setenv("SKDPSYNTH_DATA_HOME", str(home))
    assert get_data_home() == home
    assert load_dataset("uci_dropout", download=False).frame.shape == (4_424, 37)
    # fetch_dataset finds the cached copy and does not download
    monkeypatch.setitem(DATASETS, "uci_dropout", dataclasses.replace(
        DATASETS["uci_dropout"], sources=(_Source((tmp_path / "nowhere.zip").as_uri(), "zip"),)))
    assert fetch_dataset("uci_dropout") == home / "uci_dropout"


def test_missing_files_without_download_is_a_clear_error(tmp_path):
    with pytest.raises(DatasetNotFoundError, match="download=False"):
        load_uci_hesp(data_home=tmp_path, download=False)
    with pytest.raises(FileNotFoundError):  # DatasetNotFoundError is a FileNotFoundError
        load_adult(path=tmp_path / "does-not-exist", download=False)
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetNotFoundError, match="studentInfo.csv"):
        load_oulad(path=tmp_path / "empty")


def test_download_from_archive(tmp_path, monkeypatch):
    """The download path with a local file:// URL: nested zip, CSV renamed to the expected name."""
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as zf:
        zf.writestr("folder/DATA (1).csv", "STUDENT ID,1\nSTUDENT1,2\n")
    outer = tmp_path / "archive.zip"
    with zipfile.ZipFile(outer, "w") as zf:
        zf.writestr("inner.zip", inner.getvalue())
    monkeypatch.setitem(DATASETS, "uci_hesp", dataclasses.replace(
        DATASETS["uci_hesp"], sources=(_Source(outer.as_uri(), "zip"),)))
    folder = fetch_dataset("uci_hesp", data_home=tmp_path / "home")
    assert folder == tmp_path / "home" / "uci_hesp"
    assert (folder / "students-performance.csv").read_text().startswith("STUDENT ID")
    assert not list(folder.glob("*.part"))


def test_failed_download_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setitem(DATASETS, "uci_dropout", dataclasses.replace(
        DATASETS["uci_dropout"], sources=(_Source((tmp_path / "missing.zip").as_uri(), "zip"),)))
    with pytest.raises(DatasetNotFoundError, match="could not download"):
        load_uci_dropout(data_home=tmp_path)
    assert not (tmp_path / "uci_dropout" / "data.csv").exists()


def test_list_datasets_and_unknown_names():
    names = list_datasets()
    assert set(names) == {"adult", "uci_dropout", "uci_hesp", "oulad"}
    assert all("CC BY 4.0" in v for v in names.values())
    with pytest.raises(ValueError, match="unknown dataset"):
        fetch_dataset("nope")
    with pytest.raises(ValueError, match="unknown dataset"):
        load_dataset("nope")
