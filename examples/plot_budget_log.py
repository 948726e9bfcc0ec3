"""
The privacy budget log
======================

Every use of the private data is one record of ``budget_log_``: the mechanism, what it measured, its
sensitivity and its cost. ``privacy_spent_`` composes them into the release's guarantee. This example
reads the log of one fit and of a second cohort folded in with ``partial_fit``.
"""

# %%
# One fit, one log
# ----------------
import matplotlib.pyplot as plt
import pandas as pd

from skdpsynth import MSTSynthesizer
from skdpsynth.datasets import make_learning_habits

first = make_learning_habits(2000, n_weeks=2, random_state=1)
synth = MSTSynthesizer(epsilon=1.0, schema=first.schema, random_state=0).fit(first.frame)
log = pd.DataFrame([{"cohort": r.cohort, "mechanism": r.mechanism, "target": r.target, "kind": r.kind,
                     "epsilon": r.epsilon, "rho": r.rho} for r in synth.budget_log_])
print(log.head(8).to_string())
print(synth.privacy_spent_)

# %%
# A second cohort
# ---------------
# Next year's students are other people: with ``cohort_composition="parallel"`` (the default) each cohort
# spends its own budget and the guarantee stays at the largest one.
second = make_learning_habits(2000, n_weeks=2, cohort_shift=0.5, random_state=2).frame
synth.partial_fit(second)
print(len(synth.budget_log_), "records over", len(synth.privacy_spent_.per_cohort), "cohorts")
print(synth.privacy_spent_)

# %%
# Where the budget went
# ---------------------
# Each cohort's zCDP budget (``rho``), by mechanism: the first cohort also pays for choosing which
# marginals to measure (the exponential mechanism); the second re-measures the same ones on its own people.
log = pd.DataFrame([{"cohort": r.cohort, "mechanism": r.mechanism, "rho": r.rho} for r in synth.budget_log_])
shares = log.pivot_table(index="cohort", columns="mechanism", values="rho", aggfunc="sum").fillna(0.0)
ax = shares.plot.bar(stacked=True, figsize=(7, 3.5), rot=0)
ax.legend(title="mechanism", loc="upper left", bbox_to_anchor=(1.02, 1))
ax.set_xlabel("cohort")
ax.set_ylabel("rho (zCDP) spent")
ax.set_title("Budget spent per cohort, by mechanism")
plt.tight_layout()
