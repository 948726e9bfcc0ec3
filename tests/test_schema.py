"""TableSchema: construction, JSON round trip, validation, infer_schema, DP estimation."""

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skdpsynth import PrivacyLeakWarning, SchemaError, TableSchema, infer_schema
from skdpsynth.privacy import BudgetAccountant, NoiseSource, estimate_schema
from skdpsynth.schema import ColumnSpec


def test_from_dict_forms_agree(mixed_schema):
    as_dict = mixed_schema.to_dict()
    again = TableSchema.from_dict(as_dict)
    assert again == mixed_schema
    as_list = [dict(v, name=k) for k, v in as_dict["columns"].items()]
    assert TableSchema.from_dict(as_list) == mixed_schema


def test_json_round_trip(tmp_path, mixed_schema):
    path = tmp_path / "schema.json"
    mixed_schema.to_json(path)
    json.loads(path.read_text())  # valid JSON
    assert TableSchema.from_json(path) == mixed_schema


@pytest.mark.parametrize(
    "spec, match",
    [
        ({"a": {"kind": "number"}}, "kind 'number'"),
        ({"a": {"kind": "continuous", "lower": 0}}, "needs public 'lower' and 'upper'"),
        ({"a": {"kind": "continuous", "lower": 5, "upper": 1}}, "exceeds upper"),
        ({"a": {"kind": "categorical"}}, "needs a non-empty 'categories'"),
        ({"a": {"kind": "categorical", "categories": ["x", "x"]}}, "duplicates"),
        ({"a": {"kind": "integer", "lower": 0, "upper": 1, "colour": 1}}, "unknown schema keys"),
        ({"a": {"kind": "continuous", "lower": 0, "upper": math.inf}}, "finite"),
    ],
)
def test_bad_schema_errors_name_the_column(spec, match):
    with pytest.raises(SchemaError, match=match):
        TableSchema.from_dict(spec)


def test_validate_lists_every_bad_column(mixed_schema, mixed_frame):
    bad = mixed_frame.copy()
    bad["course"] = bad["course"].replace("art", "dance")
    bad.loc[0, "age"] = np.nan
    bad["age"] = bad["age"].astype(float)
    with pytest.raises(SchemaError) as err:
        mixed_schema.validate(bad)
    assert "'course'" in str(err.value) and "'dance'" not in str(err.value)  # a confirmed schema shows no data
    assert "'age'" in str(err.value) and "nullable=False" in str(err.value)
    with pytest.raises(SchemaError, match="'dance'"):  # a draft shows examples, to finish it from the codebook
        TableSchema(mixed_schema.columns, public=False).validate(bad)


def test_validate_missing_and_extra_columns(mixed_schema, mixed_frame):
    with pytest.raises(SchemaError, match=r"\['age'\] are in the schema but not in the data"):
        mixed_schema.validate(mixed_frame.drop(columns="age"))
    with pytest.raises(SchemaError, match=r"\['extra'\] are not in the schema"):
        mixed_schema.validate(mixed_frame.assign(extra=1))


def test_validate_clips_out_of_bounds_with_warning(mixed_schema, mixed_frame):
    df = mixed_frame.copy()
    df.loc[:4, "score"] = 150.0
    with pytest.warns(UserWarning, match=r"clipped to them in columns 'score'") as caught:  # the count is private
        out = mixed_schema.validate(df)
    assert "5" not in str(caught[0].message)
    assert out["score"].max() == 100.0
    assert df["score"].max() == 150.0  # input untouched
    with pytest.raises(SchemaError, match="outside the public bounds"):
        mixed_schema.validate(df, clip=False)


def test_validate_rejects_text_in_numeric_and_fractions_in_integer(mixed_schema, mixed_frame):
    df = mixed_frame.copy()
    df["score"] = df["score"].astype(object)
    df.loc[3, "score"] = "n/a"
    df["age"] = df["age"] + 0.5
    with pytest.raises(SchemaError) as err:
        mixed_schema.validate(df)
    assert "non-numeric" in str(err.value) and "non-whole" in str(err.value)


def test_infer_schema_warns_and_is_marked_not_public(mixed_frame):
    with pytest.warns(PrivacyLeakWarning):
        schema = infer_schema(mixed_frame)
    assert not schema.public
    assert schema["course"].kind == "categorical"
    assert schema["age"].kind == "integer"
    assert schema["enrolled"].kind == "datetime"
    assert schema["online"].kind == "boolean"
    assert schema["score"].nullable and not schema["age"].nullable
    assert schema.raw == {"score.bounds", "age.bounds", "course.categories", "enrolled.bounds"}
    with pytest.raises(SchemaError, match="identify people"):  # read from the data: no confirming by accident
        schema.confirm()


def test_estimate_schema_is_charged_and_close(mixed_frame):
    acc = BudgetAccountant(4.0, 1e-5)
    schema = estimate_schema(mixed_frame, epsilon=4.0, delta=1e-5, accountant=acc, noise=NoiseSource.secure())
    eps, delta = acc.spent()
    assert eps <= 4.0 + 1e-9 and delta <= 1e-5
    composed = [r for r in acc.records if r.details.get("parts")]
    assert len(composed) == 1  # every part after the count in one composition, converted once
    assert "kinds" in {p["part"] for p in composed[0].details["parts"]}  # kinds are measured, not read off dtypes
    assert [c.kind for c in schema.columns] == ["continuous", "integer", "categorical", "boolean", "datetime"]
    assert set(schema["course"].categories) <= {"math", "bio", "art"}
    assert "math" in schema["course"].categories
    # ages 17-39: the upper bound is 45 or 39 in 99 % of fits; the noisy tail check widens it a bin or two further
    # in the rest (1,000 fits: 63 twice, 90 once), which is its design (a false alarm widens, never clips)
    lo, hi = schema["age"].numeric_bounds
    assert 10 <= lo <= 25 and 30 <= hi <= 90
    assert schema["online"].kind == "boolean"
    # real dates span 400 days from 2020-09-01; the bins are calendar quarters, so the lower bound is the start of
    # a quarter, one quarter before the first date in 99.5 % of fits and two or three in the rest (tail check)
    assert -300 < (schema["enrolled"].lower - pd.Timestamp("2020-09-01")).days < 120


def test_estimate_schema_refuses_when_budget_too_small(mixed_frame):
    acc = BudgetAccountant(0.5, 1e-5)
    from skdpsynth import PrivacyBudgetError

    with pytest.raises(PrivacyBudgetError):
        estimate_schema(mixed_frame, epsilon=1.0, delta=1e-5, accountant=acc, noise=NoiseSource.secure())
    assert not acc.records  # nothing spent


columns = st.lists(
    st.one_of(
        st.tuples(st.just("continuous"), st.floats(-1e6, 1e6), st.floats(0, 1e6)),
        st.tuples(st.just("integer"), st.integers(-1000, 1000), st.integers(0, 1000)),
        st.tuples(st.just("categorical"), st.lists(st.text(min_size=1, max_size=5), min_size=1, max_size=6,
                                                   unique=True), st.booleans()),
        st.tuples(st.just("boolean"), st.booleans(), st.booleans()),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=60, deadline=None)
@given(columns)
def test_schema_dict_round_trip_property(cols):
    spec = {}
    for i, (kind, a, b) in enumerate(cols):
        name = f"c{i}"
        if kind in ("continuous", "integer"):
            spec[name] = {"kind": kind, "lower": a, "upper": a + b}
        elif kind == "categorical":
            spec[name] = {"kind": kind, "categories": a, "nullable": b}
        else:
            spec[name] = {"kind": kind, "nullable": b}
    schema = TableSchema.from_dict(spec)
    assert TableSchema.from_dict(json.loads(json.dumps(schema.to_dict()))) == schema


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(st.floats(-50, 150), st.just(float("nan"))), min_size=1, max_size=30))
def test_validate_property_values_end_in_bounds(values):
    schema = TableSchema((ColumnSpec("x", "continuous", 0, 100),))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = schema.validate(pd.DataFrame({"x": values}))
    finite = out["x"].dropna()
    assert ((finite >= 0) & (finite <= 100)).all()
    assert out["x"].isna().sum() == pd.Series(values).isna().sum()


def _with_one_extreme_person(n: int = 100) -> pd.DataFrame:
    """A table whose one extra person has an outlier age and a category nobody else has."""
    X = pd.DataFrame({"age": [18, 19, 25, 40] * (n // 4), "course": ["a", "b", "a", "c"] * (n // 4),
                      "online": [True, False] * (n // 2)})
    return pd.concat([X, pd.DataFrame({"age": [97], "course": ["only-me"], "online": [True]})], ignore_index=True)


def test_draft_marks_every_bound_and_category_raw():
    X = _with_one_extreme_person()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # drafting is deliberate: no leak warning
        draft = TableSchema.draft(X)
    assert draft.raw == {"age.bounds", "course.categories"} and not draft.public
    assert draft["age"].upper == 97 and "only-me" in draft["course"].categories  # what the marks are for
    assert all(c.nullable for c in draft.columns)  # whether anyone is missing is not read from the data
    notes = draft.checklist()
    assert any("'age'" in n and "RAW" in n and "documented range" in n for n in notes)
    assert any("--accept age.bounds" in n and "identify people" in n for n in notes)
    with pytest.raises(SchemaError, match=r"'age.bounds', 'course.categories'.*identify people.*--accept age.bounds "
                                          r"--accept course.categories"):
        draft.confirm()


def test_confirm_takes_each_raw_entry_replaced_or_accepted_by_name():
    draft = TableSchema.draft(_with_one_extreme_person())
    with pytest.raises(SchemaError, match=r"\['course.categories'\]"):
        draft.confirm(accept=["age.bounds"])
    with pytest.raises(SchemaError, match=r"cannot accept \['online.categories'\]"):
        draft.confirm(accept=["age.bounds", "course.categories", "online.categories"])
    accepted = draft.confirm(accept=["age.bounds", "course.categories"])
    assert accepted.public and not accepted.raw
    half = draft.with_columns(changes={"age": {"lower": 15}})  # one bound replaced: the maximum is still the data's
    assert half.raw == draft.raw
    done = half.with_columns(ColumnSpec.from_codes("course", ["a", "b", "c", "d"]),
                             changes={"age": {"lower": 15, "upper": 99}})
    assert not done.raw and done.confirm().public and "only-me" not in done.confirm()["course"].categories
    assert draft.select(["course", "online"]).raw == {"course.categories"}


def test_a_hand_flipped_public_true_does_not_certify_a_raw_draft(tmp_path):
    from skdpsynth import DPMarginalsSynthesizer

    X = _with_one_extreme_person()
    spec = TableSchema.draft(X).to_dict()
    assert spec["raw"] == ["age.bounds", "course.categories"]
    spec["public"] = True
    (tmp_path / "draft.json").write_text(json.dumps(spec))
    with pytest.raises(SchemaError, match=r'draft.json.*"public": true but entries .*marked raw.*--accept'):
        TableSchema.from_json(tmp_path / "draft.json")
    synth = DPMarginalsSynthesizer(epsilon=1.0, schema=tmp_path / "draft.json")
    with pytest.raises(SchemaError):
        synth.fit(X)
    assert not hasattr(synth, "budget_log_")  # refused before anything was spent
    spec["raw"] = ["online.bounds"]
    with pytest.raises(SchemaError, match=r"'raw' entry 'online.bounds'"):
        TableSchema.from_dict(spec)


def test_unconfirmed_draft_fits_as_not_private_and_a_confirmed_one_as_private(tmp_path):
    from skdpsynth import DPMarginalsSynthesizer

    X = _with_one_extreme_person()
    draft = TableSchema.draft(X)
    draft.to_json(tmp_path / "schema.json")
    assert TableSchema.from_json(tmp_path / "schema.json") == draft
    fitted = DPMarginalsSynthesizer(epsilon=1.0, schema=tmp_path / "schema.json").fit(X)
    assert not fitted.privacy_spent_.is_private
    confirmed = draft.confirm(accept=sorted(draft.raw))
    assert DPMarginalsSynthesizer(epsilon=1.0, schema=confirmed).fit(X).privacy_spent_.is_private


@pytest.mark.parametrize("seed", [72, 126, 0, 1, 2])
def test_tail_check_loosens_a_tightened_integer_edge_before_moving_bins(mixed_frame, seed):
    # regression: ages 17-39 whose top released value fell short of the data gave [16, 181] (four bins out)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        schema = estimate_schema(mixed_frame, epsilon=4.0, delta=1e-5, accountant=BudgetAccountant(4.0, 1e-5),
                                 noise=NoiseSource.reproducible_from(seed))
    lo, hi = schema["age"].numeric_bounds
    assert 10 <= lo <= 17 and 39 <= hi <= 50
