"""
A first release and its audit report
====================================

Fit a differentially private synthesizer on a table of (simulated) students, sample a release and audit
it for its task with PEARL: the release is approved only when every applicable check passes, and the
report says why. The audit's plots compare the release with the real rows.
"""

# %%
# The data and its public schema
# ------------------------------
# :func:`~skdpsynth.datasets.make_learning_habits` simulates weekly activity (inactive / active /
# dedicated in four time frames a week) and an achievement level. It comes with its public schema: the
# domain of every column, written from the study's design, never read from the rows.
from sklearn.model_selection import train_test_split

from skdpsynth import NPGCSynthesizer
from skdpsynth.audit import ReleaseAuditor, pearl_checks
from skdpsynth.datasets import make_learning_habits

data = make_learning_habits(2000, n_weeks=6, random_state=0)
train, holdout = train_test_split(data.frame, test_size=0.5, random_state=0)  # the holdout stays unseen
print(train.shape)

# %%
# Fit with a budget, then sample
# ------------------------------
# The fit spends epsilon = 1 (per person: adding or removing one student changes what is released by a
# bounded amount). Sampling is post-processing and costs nothing; its default size is a DP estimate of the
# number of students.
synth = NPGCSynthesizer(epsilon=1.0, schema=data.schema, random_state=0).fit(train)
release = synth.sample()
print(len(release), "synthetic students")
print(synth.privacy_spent_)

# %%
# Audit the release for its task
# ------------------------------
# The checks of a classification release: a formal, publishable guarantee, validity against the schema,
# a membership attack, and train-on-synthetic / test-on-real against train-on-real. Distinct students can
# share an identical row here (e.g. inactive every week), so the audit is told that shared rows between
# the training rows and the holdout are expected (``allow_shared_rows=True``) rather than a split error.
auditor = ReleaseAuditor(pearl_checks("classification", target="achievement", schema=data.schema),
                         random_state=0)
report = auditor.audit(synth, X_train=train, X_holdout=holdout, allow_shared_rows=True)
print("approved:", report.approved)
print(report.to_frame()[["passed", "score"]])

# %%
# The report's plots
# ------------------
# Real vs synthetic marginals, the distances of members and non-members to their closest synthetic row,
# and the classifier trained on synthetic rows against the one trained on real rows. (The plots and the
# check reasons are computed on real rows: they are for the data owner, not for publication.)
figures = report.figures(max_columns=6)
print(sorted(figures))
