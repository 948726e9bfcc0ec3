"""Common tests over every registered synthesizer (imbalanced-learn's test_common is the model).

A synthesizer is covered here the moment it is registered in ``skdpsynth.synthesizers._registry``.
Small settings and the data each kind needs are listed once (``FAST``); expected failures of
scikit-learn's ``check_estimator`` are listed once, with reasons (``EXPECTED_FAILED``).
"""

from __future__ import annotations

import importlib
import sys
import warnings
from functools import partial

import pytest
from sklearn.utils.estimator_checks import estimator_checks_generator

from skdpsynth.datasets import make_clickstream, make_learning_habits
from skdpsynth.schema import TableSchema
from skdpsynth.synthesizers._registry import REGISTRY
from skdpsynth.utils.estimator_checks import SYNTHESIZER_CHECKS, check_registry, check_synthesizer

SEQ_COLS = {"id_column": "learner_id", "order_column": "position", "event_columns": "activity",
            "label_column": "outcome"}

#: small, fast settings per synthesizer (model sizes only: never the privacy parameters)
FAST = {
    "DPCTGANSynthesizer": {"epochs": 1, "batch_size": 64, "hidden_dims": (16,), "noise_dim": 8},
    "PATEGANSynthesizer": {"n_iter": 3, "n_teachers": 4, "teacher_steps": 1, "batch_size": 16, "hidden_dims": (16,),
                           "noise_dim": 8},
    "CAPSSynthesizer": {"target": "achievement", "m1_hidden": (32,), "z1_dim": 4, "m2_hidden": (16,), "z2_dim": 2,
                        "classifier_hidden": (16,), "pretrain_epochs": 1, "n_surrogate": 400, "epochs": 2,
                        "batch_size": 16, "n_public_samples": 128, "public_batch_size": 32, "replay_new": 200,
                        "replay_old": 200, "replay_epochs": 1, "public_steps": 10},
    "CTGANSynthesizer": {"epochs": 1, "batch_size": 50},
    "TVAESynthesizer": {"epochs": 1, "batch_size": 50},
    "DPMarkovSynthesizer": {**SEQ_COLS, "max_length": 40},
    "DPHistSeqSynthesizer": {**SEQ_COLS, "max_length": 40},
}

_SEQ = "fits a long-format event table (DataFrame), not a numeric 2-D array"
#: scikit-learn checks that cannot apply, with the reason, listed once
EXPECTED_FAILED = {
    info.name: {name: _SEQ for name in (
        "check_fit_score_takes_y", "check_estimators_overwrite_params", "check_dont_overwrite_parameters",
        "check_estimators_fit_returns_self", "check_readonly_memmap_input", "check_n_features_in_after_fitting",
        "check_positive_only_tag_during_fit", "check_estimators_dtypes", "check_complex_data", "check_dtype_object",
        "check_pipeline_consistency", "check_estimators_pickle", "check_f_contiguous_array_estimator",
        "check_methods_sample_order_invariance", "check_methods_subset_invariance", "check_fit2d_1sample",
        "check_fit2d_1feature", "check_dict_unchanged", "check_fit_idempotent", "check_fit_check_is_fitted",
        "check_n_features_in", "check_fit1d", "check_fit2d_predict1d")}
    for info in REGISTRY if info.data == "sequence"
}
#: scikit-learn's checks pass y separately; CAPS joins it as its label column, named by ``target``; they test the
#: API, not the fit's accuracy: AIM's estimation stops after 30 iterations and its selection after d + 1 rounds
#: (without a budget, its rounds run until the model explains every marginal, up to 16 d: 26 -> 7 s of CPU for
#: AIM's checks)
CHECK_ESTIMATOR_PARAMS = {"CAPSSynthesizer": {"target": "y", "epsilon": None},
                          "AIMSynthesizer": {"max_iters": 30, "rounds": 1}}
#: training a network in every scikit-learn check is slow: these run with ``-m slow``
SLOW_CHECK_ESTIMATOR = {"DPCTGANSynthesizer", "PATEGANSynthesizer", "CAPSSynthesizer", "CTGANSynthesizer",
                        "TVAESynthesizer"}
#: what a DP network must pass in every default run (one fit each); its other checks run with ``-m slow``
PRIVACY_CHECKS = {"noise_unrecoverable", "budget", "no_training_rows"}


def _cases(private_only: bool = False) -> list:
    marks = {"CTGANSynthesizer": [pytest.mark.slow], "TVAESynthesizer": [pytest.mark.slow]}
    return [pytest.param(info, id=info.method, marks=marks.get(info.name, [])) for info in REGISTRY
            if info.private or not private_only]


def _check_estimator_instance(info):
    params = {**FAST.get(info.name, {}), "random_state": 0, **CHECK_ESTIMATOR_PARAMS.get(info.name, {})}
    if info.data == "table" and info.private:
        # scikit-learn's checks fit 1-40 rows: no DP domain estimate is possible there (it refuses before
        # spending, see tests/test_domain.py), so the API checks run on the non-private path
        params.setdefault("epsilon", None)
    return info.load()(**params)


def _check_id(check: partial) -> str:
    kwargs = ",".join(f"{k}={v}" for k, v in check.keywords.items())
    return f"{check.func.__name__}({kwargs})" if kwargs else check.func.__name__


def _sklearn_checks() -> list:
    """scikit-learn's checks, one test each (what ``parametrize_with_checks`` does), slow ones marked."""
    cases = []
    for info in REGISTRY:
        slow = [pytest.mark.slow] if info.name in SLOW_CHECK_ESTIMATOR else []
        expected = EXPECTED_FAILED.get(info.name, {})
        for est, check in estimator_checks_generator(_check_estimator_instance(info)):
            name = check.func.__name__
            # strict: a check listed as failing that passes is a stale entry
            xfail = [pytest.mark.xfail(reason=expected[name], strict=True)] if name in expected else []
            cases.append(pytest.param(est, check, marks=xfail + slow, id=f"{info.method}-{_check_id(check)}"))
    return cases


@pytest.fixture(scope="module")
def sequence_data():
    return make_clickstream(600, min_length=10, max_length=40, random_state=0)


@pytest.fixture(scope="module")
def caps_data():
    return make_learning_habits(105, n_weeks=3, random_state=1)


def make_case(info, mixed_frame, mixed_schema, sequence_data, caps_data, **params):
    """An instance with a public domain and data it can be fitted on."""
    cls = info.load()
    kw = {**FAST.get(info.name, {}), "random_state": 0, **params}
    if info.data == "sequence":
        # the whole public domain: with the label categories estimated under DP, the checks that refit on part
        # of these 600 learners left about 280 against a release threshold of about 246 (refused in some draws)
        kw.setdefault("vocabulary", list(sequence_data.schema["vocabulary"]))
        kw.setdefault("schema", TableSchema.from_dict({"outcome": {
            "kind": "categorical", "categories": list(sequence_data.schema["outcomes"]), "nullable": False}}))
        return cls(**kw), sequence_data.frame
    if info.name == "CAPSSynthesizer":
        return cls(schema=caps_data.schema, **kw), caps_data.frame
    return cls(schema=mixed_schema, **kw), mixed_frame.iloc[:300]


@pytest.mark.parametrize("estimator, check", _sklearn_checks())
def test_sklearn_check_estimator(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)


def test_sklearn_api_checks_apply_to_every_synthesizer():
    # the checks of the estimator API are run, not listed as expected failures, for every synthesizer
    api = {"check_get_params_invariance", "check_set_params", "check_no_attributes_set_in_init"}
    for info in REGISTRY:
        checks = {c.func.__name__ for _, c in estimator_checks_generator(_check_estimator_instance(info))}
        assert api <= checks - set(EXPECTED_FAILED.get(info.name, {})), info.name


def test_every_public_synthesizer_is_registered():
    check_registry()


PLANT = """
from skdpsynth.synthesizers._histogram import DPHistogramSynthesizer


class PlantedSynthesizer(DPHistogramSynthesizer):
    '''A public synthesizer nobody registered.'''
"""


def test_an_unregistered_synthesizer_fails_the_registry_check(tmp_path, monkeypatch):
    # a new module in the synthesizers package, as a contributor would add it, without its registry line
    package = importlib.import_module("skdpsynth.synthesizers")
    (tmp_path / "_planted.py").write_text(PLANT)
    monkeypatch.setattr(package, "__path__", [*package.__path__, str(tmp_path)])
    importlib.invalidate_caches()
    try:
        with pytest.raises(AssertionError, match=r"not registered: \['PlantedSynthesizer'\]"):
            check_registry()
    finally:
        sys.modules.pop("skdpsynth.synthesizers._planted", None)


def _synthesizer_check_cases() -> list:
    """Every check for every synthesizer; a DP network's checks beyond the privacy ones (4-25 s each) run with
    ``-m slow``."""
    cases = []
    for case in _cases():
        info = case.values[0]
        names = [n for n in SYNTHESIZER_CHECKS if info.data == "table" or n != "sample_schema"]
        if info.private and info.name in SLOW_CHECK_ESTIMATOR:
            privacy = [n for n in names if n in PRIVACY_CHECKS]
            cases += [pytest.param(info, privacy, id=f"{info.method}-privacy"),
                      pytest.param(info, [n for n in names if n not in privacy], id=f"{info.method}-rest",
                                   marks=pytest.mark.slow)]
        else:
            cases.append(pytest.param(info, names, id=info.method, marks=case.marks))
    return cases


@pytest.mark.parametrize("info, checks", _synthesizer_check_cases())
def test_synthesizer_checks(info, checks, mixed_frame, mixed_schema, sequence_data, caps_data):
    est, X = make_case(info, mixed_frame, mixed_schema, sequence_data, caps_data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert set(check_synthesizer(est, X, checks=checks).values()) == {"passed"}


@pytest.mark.parametrize("info", _cases(private_only=True))
def test_parameters_are_declared_and_checked_before_any_spend(info):
    est = info.load()()
    assert set(est._parameter_constraints) == set(est.get_params(deep=False)), (
        "every parameter needs a declared constraint")
    with pytest.raises(ValueError):
        est.set_params(epsilon=-1.0).fit([[0.0, 1.0], [1.0, 0.0]])
    assert not hasattr(est, "budget_log_")


@pytest.mark.parametrize("info", [c for c in _cases(private_only=True) if c.values[0].data == "table"])
def test_clipping_a_fixed_schema_is_counted_through_a_mechanism(info, mixed_frame, mixed_schema, caps_data):
    # the first version named the clipped columns whenever one value was out of range (an exact bit per column)
    est, X = make_case(info, mixed_frame, mixed_schema, None, caps_data)
    bounded = [c.name for c in est.schema.columns if c.kind in ("continuous", "integer") and c.name in X.columns]
    if not bounded:  # CAPS's habit table is all categorical: nothing can be clipped, nothing is charged
        est.fit(X)
        assert not [r for r in est.budget_log_ if "clipped to the public bounds" in r.target]
        return
    column = bounded[0]
    X = X.copy()
    X.loc[X.index[0], column] = est.schema[column].upper + 1  # one learner above the public bound
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X)
    assert not [w for w in caught if "clipped" in str(w.message)]  # one value is far below the noise
    (clip,) = [r for r in est.budget_log_ if "clipped to the public bounds" in r.target]
    assert clip.sensitivity == 1.0
    if est._zcdp_model:  # a Gaussian count: the whole fit stays Gaussian
        assert clip.kind == "zcdp" and clip.rho == pytest.approx(0.01 * sum(r.rho for r in est.budget_log_), rel=0.02)
    else:
        assert clip.kind == "pure" and clip.epsilon == pytest.approx(0.01 * est.epsilon)
    assert column in est.clip_counts_
    spent = est.privacy_spent_
    assert spent.epsilon <= est.epsilon * (1 + 1e-9) and spent.delta <= est.delta * (1 + 1e-9)
