"""The public domain of a sequence table: its event vocabulary and its per-learner schema.

Both are given (public), discovered under DP, or -- with ``epsilon=None`` or a
schema not confirmed public -- read from the data and recorded as non-private.
All privacy noise comes from :mod:`skdpsynth.privacy`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import pandas as pd

from skdpsynth.base import FitContext
from skdpsynth.exceptions import PrivacyLeakWarning, SchemaError
from skdpsynth.privacy._accounting import BudgetAccountant, BudgetRecord
from skdpsynth.privacy._domain import DomainEstimateError, plan_schema_cost
from skdpsynth.privacy._domain_plan import DomainPlan, DomainRun, Part, plan_domain
from skdpsynth.privacy._partition import WEIGHT_SCALE, weighted_gaussian_threshold
from skdpsynth.privacy._sequences import PrivateSequences
from skdpsynth.schema import TableSchema, infer_schema

__all__ = ["AUTO_SHARE", "CONVERSION_DELTA_SHARE", "DomainBudget", "VocabularyRelease", "cohort_budget",
           "discover_vocabulary", "domain_share", "domain_slice", "learner_domain", "model_budget",
           "plan_domain_budget", "record_schema_privacy", "vocabulary_advice", "vocabulary_part", "vocabulary_release",
           "vocabulary_threshold", "zcdp_delta"]

#: larger domain shares a refusal of the vocabulary considers, smallest first
ADVICE_SHARES = (0.15, 0.2, 0.25, 0.3, 0.4, 0.5)
#: ``domain_share="auto"``: the domain's own (epsilon, delta) slice under the pure model needs more than a slice
#: that composes in zCDP with a Gaussian model (0.1 buys it 18% of the cohort's rho at epsilon 1)
AUTO_SHARE = {"geometric": 0.2, "gaussian": 0.1}


def domain_share(est, mechanism: str | None = None) -> float:
    """The share of sequence synthesizer ``est`` under ``mechanism`` (default its own): ``"auto"`` resolved."""
    if est.domain_share != "auto":
        return float(est.domain_share)
    return AUTO_SHARE[mechanism or est.mechanism]


@dataclass(frozen=True)
class DomainBudget:
    """The first cohort's domain releases: the (epsilon, delta) slice of each and what is charged after it.

    ``records`` is what the two releases will charge, for the up-front check
    with the model's records (``accountant.require``).
    """

    vocabulary: tuple[float, float] | None = None
    learners: tuple[float, float] | None = None
    vocabulary_later: tuple[BudgetRecord, ...] = ()
    learners_later: tuple[BudgetRecord, ...] = ()
    records: tuple[BudgetRecord, ...] = ()
    mode: str = "none"


def domain_slice(epsilon: float, delta: float, mechanism: str, share: float) -> tuple[float, float]:
    """(epsilon, delta) of the domain: ``share`` of epsilon; all of delta under a pure model, else ``share`` of it."""
    return epsilon * share, delta if mechanism == "geometric" else delta * share


#: under a pure (geometric) model, the share of the domain's delta at which its releases' zCDP is converted (the
#: rest goes to their release thresholds)
CONVERSION_DELTA_SHARE = 0.5


def zcdp_delta(epsilon: float | None, delta: float, mechanism: str, share: float, parts: tuple[bool, bool]) -> float:
    """The cohort's ``delta_zcdp`` (public: parameters only).

    Under ``mechanism="gaussian"`` the model's zCDP is converted at what the
    domain slice leaves of delta. Under a pure (geometric) model, when the
    cohort estimates a domain (``parts``: vocabulary, label/static domain) with
    a positive delta, ``CONVERSION_DELTA_SHARE`` of the domain's delta: its
    releases are then charged in zCDP and composed with each other, converted
    once (:func:`plan_domain_budget`); the model's records stay pure.
    """
    if epsilon is None:
        return 0.0
    eps_dom, delta_dom = domain_slice(epsilon, delta, mechanism, share) if any(parts) else (0.0, 0.0)
    if mechanism == "gaussian":
        return delta - delta_dom
    return CONVERSION_DELTA_SHARE * delta_dom if eps_dom > 0 and delta_dom > 0 else 0.0


def model_budget(shares: dict[str, float], accountant: BudgetAccountant, eps_dom: float,
                 mechanism: str) -> tuple[dict[str, float], list[BudgetRecord]]:
    """Each measurement's epsilon (geometric) or rho (gaussian) after the domain slice, and its planned record."""
    if mechanism == "geometric":
        rest = accountant.remaining_epsilon() - eps_dom
        budget = {k: v * rest for k, v in shares.items()}
        return budget, [BudgetRecord("geometric", k, "pure", epsilon=e) for k, e in budget.items()]
    rho = accountant.remaining_rho(reserve_epsilon=eps_dom)
    budget = {k: v * rho for k, v in shares.items()}
    return budget, [BudgetRecord("discrete gaussian", k, "zcdp", rho=r) for k, r in budget.items()]


def cohort_budget(
    est, accountant: BudgetAccountant, learners: pd.DataFrame | None, parts: tuple[bool, bool], mechanism: str,
    share: float,
) -> tuple[DomainBudget, dict[str, float], list[BudgetRecord]]:
    """A cohort's plan for sequence synthesizer ``est``: the model's budget first, then the domain's, told about it.

    Public quantities only (``est``'s parameters, the accountant, the
    label/static columns' names and dtypes). ``parts`` says what is estimated
    (vocabulary, label/static domain). Returns the domain plan, each
    measurement's epsilon or rho, and the model's planned records.
    """
    eps_dom, delta_dom = domain_slice(est.epsilon, est.delta, mechanism, share) if any(parts) else (0.0, 0.0)
    measurements, model = model_budget(est._measurement_shares(), accountant, eps_dom, mechanism)
    domain = plan_domain_budget(eps_dom, delta_dom, vocabulary=parts[0], learners=learners if parts[1] else None,
                                model=model, accountant=accountant, max_contrib=int(est.max_states_per_learner))
    return domain, measurements, model


def plan_domain_budget(
    epsilon: float, delta: float, *, vocabulary: bool, learners: pd.DataFrame | None, model: Sequence[BudgetRecord],
    accountant: BudgetAccountant, max_contrib: int,
) -> DomainBudget:
    """Split the domain slice (epsilon, delta) between the vocabulary and the label/static domain.

    Each release gets half of the slice when both are estimated, all of it
    otherwise. When the accountant converts zCDP at a positive delta
    (:func:`zcdp_delta`), the domain is charged in zCDP: together the two
    releases get the rho the accountant has left beyond the model's planned
    records (its zCDP rho subtracted, its pure epsilon reserved), half each,
    and the thresholds share the delta the conversion leaves. Under a zCDP
    model the domain composes with the model -- several times what the slice
    buys on its own, while the model keeps what it would have after the slice;
    under a pure model the two releases compose with each other and are
    converted once, within the slice (two separate (epsilon / 2, delta / 2)
    conversions buy each about a quarter of the rho the whole slice buys).
    Otherwise each is an (epsilon, delta) release within its half. Each
    release is told what is charged after it (``*_later``), so that its own
    plan (:func:`~skdpsynth.privacy._domain_plan.plan_domain`) sizes the same
    rho.

    Parameters
    ----------
    epsilon, delta : float
        The domain's slice of the first cohort's budget.
    vocabulary : bool
        Whether the vocabulary is discovered.
    learners : pandas.DataFrame or None
        The label and static columns when their domain is estimated (only
        column names and dtypes are read: public).
    model : sequence of BudgetRecord
        The model's planned records.
    accountant : BudgetAccountant
        The cohort's accountant (nothing spent yet).
    max_contrib : int
        Distinct states each learner counts towards in the vocabulary.

    Returns
    -------
    DomainBudget
    """
    n = int(vocabulary) + int(learners is not None)
    if not n:
        return DomainBudget()
    model = tuple(model)
    share = (epsilon / n, delta / n)
    zcdp = delta > 0 and accountant.delta_zcdp > 0
    if zcdp:
        reserve = sum(r.epsilon for r in model if r.kind in ("pure", "approx"))
        rho_domain = accountant.remaining_rho(reserve_epsilon=reserve) - sum(r.rho for r in model if r.kind == "zcdp")
        share = (epsilon / n, min(delta, accountant.remaining_delta()) / n)
        placeholder = ((BudgetRecord("planned", "label/static domain estimate", "zcdp", rho=rho_domain / n),
                        BudgetRecord("planned", "label/static domain estimate (thresholds)", "approx",
                                     delta=share[1]))
                       if learners is not None and vocabulary else ())
        learner_records = placeholder
    else:
        placeholder = ()
        learner_records = tuple(plan_schema_cost(learners, *share)) if learners is not None else ()
    v_later = (placeholder or learner_records) + model
    records: list[BudgetRecord] = []
    if vocabulary:
        _, vocab_plan = vocabulary_part(share, v_later, accountant, max_contrib)
        records += vocab_plan.records  # the plan's records (what it will charge), not the accountant's
        records += learner_records
    elif learners is not None:
        records += plan_schema_cost(learners, *share, accountant=accountant, later=model, compose=zcdp)
    return DomainBudget(share if vocabulary else None, share if learners is not None else None, v_later, model,
                        tuple(records), "zcdp" if zcdp else "approx")


def vocabulary_part(budget: tuple[float, float], later: Sequence[BudgetRecord], accountant: BudgetAccountant | None,
                    max_contrib: int) -> tuple[Part, DomainPlan]:
    """(part, plan) of the vocabulary release: its release threshold and noise, from public quantities only."""
    compose = accountant is not None and accountant.delta_zcdp > 0
    plan = plan_domain({"categories": int(max_contrib)}, budget[0], budget[1], accountant=accountant, later=later,
                       label="event vocabulary", compose=compose)
    return plan.parts["categories"], plan


@dataclass(frozen=True)
class VocabularyRelease:
    """What a state needs to be released, in the units of its noisy score (public: from the plan).

    Under the Gaussian plan the score is a weight: each learner spreads L2 norm
    1 over the distinct states they count, ``1 / sqrt(d)`` on each of ``d``
    (:func:`~skdpsynth.privacy._partition.weighted_gaussian_selection`); under
    the Laplace one it is a count of learners (the stability histogram).
    ``per_learner`` is the least one learner who visits a state adds to its
    score (``1 / sqrt(k)`` or 1).
    """

    threshold: float
    sd: float
    per_learner: float


def vocabulary_release(part: Part, max_contrib: int) -> VocabularyRelease:
    """The release rule of the vocabulary's planned ``part`` with ``max_contrib`` states per learner."""
    k = int(max_contrib)
    if part.mechanism == "gaussian":
        sd = 1.0 / math.sqrt(2 * part.cost)
        tau = weighted_gaussian_threshold(k, WEIGHT_SCALE * sd, part.delta) / WEIGHT_SCALE
        return VocabularyRelease(tau, sd, 1.0 / math.sqrt(k))
    return VocabularyRelease(float(part.release_threshold), part.sd, 1.0)


def vocabulary_threshold(est, learners: pd.DataFrame | None, mechanism: str, share: float) -> VocabularyRelease:
    """The vocabulary's release rule (:class:`VocabularyRelease`) for sequence synthesizer ``est`` under these settings.

    Public quantities only (the parameters, the label/static columns' names
    and dtypes): what a first cohort's vocabulary release would need with
    ``mechanism`` and ``domain_share=share``, the label/static domain
    estimated too when ``learners`` is given.
    """
    dz = zcdp_delta(est.epsilon, est.delta, mechanism, share, (True, learners is not None))
    acc = BudgetAccountant(est.epsilon, est.delta, delta_zcdp=dz)
    domain, _, _ = cohort_budget(est, acc, learners, (True, learners is not None), mechanism, share)
    part, _ = vocabulary_part(domain.vocabulary, domain.vocabulary_later, acc, int(est.max_states_per_learner))
    return vocabulary_release(part, int(est.max_states_per_learner))


def vocabulary_advice(est, learners: pd.DataFrame | None, n_hat: int) -> str:
    """What would release the vocabulary of about ``n_hat`` learners: text for a refusal, from public quantities.

    ``n_hat`` is a DP figure (a low estimate from the noisy count of learners).

    A setting "works" when a state visited by half of the learners, each
    counting ``max_states_per_learner`` states (the public worst case), reaches
    the release threshold with probability about 84% or more (threshold plus
    one noise sd at most what they add). For each mechanism (the current one,
    ``"gaussian"``: the vocabulary then composes in zCDP with the model) and
    each label/static domain (estimated, or a public schema: the vocabulary
    then gets the whole domain share), the smallest working ``domain_share``
    among the current one and :data:`ADVICE_SHARES` is named; and always
    ``vocabulary=``.
    """
    half = n_hat / 2
    estimated = learners is not None
    fixes = []
    for mechanism in dict.fromkeys((est.mechanism, "gaussian")):
        base = domain_share(est, mechanism)
        for with_learners in dict.fromkeys((estimated, False)):
            for share in (s for s in (base, *ADVICE_SHARES) if s >= base):
                if (mechanism, with_learners, share) == (est.mechanism, estimated, base):
                    continue  # the setting that was refused
                rule = vocabulary_threshold(est, learners if with_learners else None, mechanism, share)
                if rule.threshold + rule.sd <= half * rule.per_learner:
                    fixes.append(_setting(est, mechanism, share, estimated and not with_learners, learners, rule))
                    break
    lead = (f"For {max(n_hat, 0):,} learners (a low estimate from that count), a state visited by half of them "
            "would be released with: "
            + "; ".join(fixes) + ". Or" if fixes else
            f"No mechanism, domain_share up to {ADVICE_SHARES[-1]:g} or public label schema releases a state visited "
            f"by half of {max(n_hat, 0):,} learners (a low estimate from that count) at this epsilon: raise epsilon, "
            "or")
    return (f"{lead} give the public event vocabulary with `vocabulary=` (e.g. the activity types of the platform's "
            "documentation), which costs no budget.")


def _setting(est, mechanism: str, share: float, schema: bool, learners: pd.DataFrame | None,
             rule: VocabularyRelease) -> str:
    """One working setting, as the user would write it, with what it costs."""
    parts = []
    if mechanism != est.mechanism:
        parts.append(f"mechanism={mechanism!r}")
    if share != domain_share(est, mechanism):
        parts.append(f"domain_share={share:g}")
    if schema:
        parts.append(f"schema= with the public categories of {list(learners.columns)}")
    notes = [f"a state needs about {math.ceil(rule.threshold / rule.per_learner):,} learners who each visit "
             f"{est.max_states_per_learner} states"]
    if mechanism == "gaussian" and est.mechanism != "gaussian":
        notes.append("the vocabulary composes in zCDP with the model, whose counts get Gaussian noise of L2 "
                     "sensitivity max_length")
    if share != domain_share(est, mechanism):
        notes.append(f"the model keeps {1 - share:.0%} of epsilon")
    return " and ".join(parts) + f" ({'; '.join(notes)})"


def discover_vocabulary(
    data: PrivateSequences, *, max_contrib: int, epsilon: float | None, delta: float, ctx: FitContext,
    later: Sequence[BudgetRecord] = (), advice: Callable[[int], str] | None = None,
) -> list[tuple]:
    """Release the event vocabulary (joint states) under (epsilon, delta)-DP: a partition selection.

    Each learner counts towards (at most) the first ``k = max_contrib``
    distinct states they visit (``k`` is a public parameter). The candidates
    are exactly the states counted after this bounding -- a state only seen
    beyond some learner's bound is not a candidate, so it cannot be released.
    The budget is planned from public quantities by
    :func:`skdpsynth.privacy._domain_plan.plan_domain`:

    1. a noisy count of learners (a small share); when even a state that every
       learner visits alone could not reach the release threshold (the count
       less one noise sd is below it), ONE error says so before anything else
       is measured, naming the settings that would work (``advice``);
    2. the partition selection (:meth:`PrivateSequences.select_states`). Gaussian
       plan (the usual one): each learner spreads a weight of L2 norm 1 over the
       distinct states they count (``1 / sqrt(d)`` on each of ``d <= k``) and a
       state is released when its noisy weight passes a threshold that a state
       held by one learner alone passes with probability at most delta
       (:func:`~skdpsynth.privacy._partition.weighted_gaussian_selection`: L2
       sensitivity 1, whatever ``k``; Gopi et al. 2020). Laplace plan (when its
       threshold is lower, e.g. ``k = 1``): the stability histogram of learner
       counts (L1 sensitivity ``k``, :func:`skdpsynth.privacy.stability_histogram`).
       With ``later`` (what is charged afterwards: the model's planned records)
       holding zCDP records it is charged in zCDP and composes with the model;
       otherwise it is one (epsilon, delta) record.

    The bound is on distinct states, not on events: every event of each
    learner counts (no ``max_length`` truncation needed).

    (epsilon, delta)-DP under add/remove-one-learner. With ``epsilon=None`` every
    observed state is kept and the read is recorded as non-private.

    Parameters
    ----------
    data : PrivateSequences
        The cohort's learners, behind the handle.
    max_contrib : int
        Contribution bound (distinct states per learner).
    epsilon : float or None
        Cost of the release (``None``: non-private).
    delta : float
        Its delta.
    ctx : FitContext
        Accountant (the handle's) and noise source of the cohort.
    later : sequence of BudgetRecord
        What will be charged afterwards (the label/static domain, the model);
        zCDP records enable the zCDP mode.
    advice : callable, optional
        Given a low estimate of the number of learners (the noisy count less
        one noise sd), the settings that would work (text for the refusal;
        computed from public quantities and that count only).

    Returns
    -------
    list of tuple
        The released states, sorted.
    """
    if epsilon is None:
        return data.observed_states("event vocabulary read from the data (epsilon=None)")
    k = int(max_contrib)
    part, plan = vocabulary_part((epsilon, delta), later, ctx.accountant, k)
    rule = vocabulary_release(part, k)
    run = DomainRun(plan, ctx.accountant, ctx.noise)
    n_hat = data.domain_count(run)
    # a lower confidence bound (one noise sd): a lucky count must not let a doomed release spend
    low = n_hat - min(plan.count.sd, 0.25 * rule.threshold)
    fix = advice(max(int(low), 0)) if advice is not None else (
        "Give the public event vocabulary with `vocabulary=` (e.g. the activity types of the platform's "
        "documentation), or raise epsilon or domain_share.")
    if low < rule.threshold:
        raise DomainEstimateError(
            f"the event vocabulary cannot be discovered at this budget: even a state that every learner visits "
            f"alone would need about {math.ceil(rule.threshold):,} of them to be released, and there are about "
            f"{max(n_hat, 0):,} (a noisy count, the only thing measured). {fix}")
    states = data.select_states(run, part, k)
    if not states:
        raise SchemaError(f"no event is visited by enough learners to be released at this budget (a state visited "
                          f"by learners who each visit {k} states needs about "
                          f"{math.ceil(rule.threshold / rule.per_learner):,} of them). {fix}")
    return states


def learner_domain(
    data: PrivateSequences, given: TableSchema | None, *, label_column: str | None,
    budget: tuple[float, float] | None, later: Sequence[BudgetRecord] = (),
) -> TableSchema:
    """The schema of the label and static columns for the first cohort.

    A given schema is used as is (recorded as non-private when it is not
    confirmed public, see :func:`record_schema_privacy`); without one it is
    estimated under DP with ``budget`` = (epsilon, delta) by
    :func:`skdpsynth.privacy.estimate_schema`, or, when ``budget`` is None
    (``epsilon=None``), read from the data and recorded as non-private. An
    estimated label is not nullable: the input contract requires a complete
    label, so that is public (learners whose label is not released are left
    out instead, see ``BaseSequenceSynthesizer``). ``later`` as in
    :func:`discover_vocabulary`.
    """
    if given is not None:
        return given.select(list(data.learner_template.columns))
    if budget is None:
        learners = data.nonprivate_learners("label/static domain read from the data (epsilon=None)")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            return infer_schema(learners)
    schema = data.estimate_learner_schema(*budget, later=later)
    if label_column is None:
        return schema
    return TableSchema(tuple(replace(c, nullable=False, fill=None) if c.name == label_column else c
                             for c in schema.columns))


def record_schema_privacy(schema: TableSchema | None, ctx: FitContext) -> None:
    """Record a cohort measured on a label/static schema that is not confirmed public as non-private."""
    if schema is not None and not schema.public and ctx.accountant.private:
        ctx.accountant.declare_nonprivate("label/static domain read from the data (schema not confirmed public)")
