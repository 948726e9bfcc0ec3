"""
A sequence release
==================

Learning-activity sequences (one row per event) are released by
:class:`~skdpsynth.synthesizers.DPMarkovSynthesizer`: noisy counts of the learners' labels and sequence
lengths, and of the transitions between consecutive events per label. Here the outcome depends only on
the *order* of the events, which a first-order chain keeps and the order-free baseline loses.
"""

# %%
# Simulated clickstreams
# ----------------------
import matplotlib.pyplot as plt
import pandas as pd

from skdpsynth.datasets import make_clickstream
from skdpsynth.synthesizers import DPMarkovSynthesizer

sim = make_clickstream(1500, random_state=0)
events = sim.frame
vocabulary = sorted(events.activity.unique())  # public here: the simulator's activity catalogue
print(events.head())

# %%
# Fit and sample
# --------------
synth = DPMarkovSynthesizer(epsilon=1.0, id_column="learner_id", order_column="position",
                            event_columns="activity", label_column="outcome", vocabulary=vocabulary,
                            schema={"outcome": {"kind": "categorical", "nullable": False,
                                                "categories": ["fail", "pass"]}},
                            max_length=60, random_state=0).fit(events)
synthetic = synth.sample(1000)
print(synthetic.learner_id.nunique(), "synthetic learners")
print(synth.privacy_spent_)

# %%
# Transitions, real and synthetic
# -------------------------------
# The share of each next activity after each activity, for the learners who passed.


def transitions(frame: pd.DataFrame, id_column: str, order_column: str) -> pd.DataFrame:
    """Row-normalised counts of (activity, next activity) within learners."""
    frame = frame.sort_values([id_column, order_column])
    nxt = frame.groupby(id_column)["activity"].shift(-1)
    counts = pd.crosstab(frame["activity"], nxt).reindex(index=vocabulary, columns=vocabulary, fill_value=0)
    return counts.div(counts.sum(axis=1).clip(lower=1), axis=0)


real = transitions(events[events.outcome == "pass"], "learner_id", "position")
fake = transitions(synthetic[synthetic.outcome == "pass"], "learner_id", "position")
top = max(real.to_numpy().max(), fake.to_numpy().max())  # one colour scale for both panels
fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
for ax, matrix, title in zip(axes, (real, fake), ("real", "synthetic (epsilon 1)")):
    image = ax.imshow(matrix.to_numpy(), vmin=0, vmax=top, cmap="viridis")
    ax.set_title(title)
    ax.set_xticks(range(len(vocabulary)), vocabulary, rotation=90)
    ax.set_yticks(range(len(vocabulary)), vocabulary)
    ax.set_xlabel("next activity")
axes[0].set_ylabel("activity")
fig.colorbar(image, ax=axes, label="share of next activity")
print(f"largest gap in a transition share: {(real - fake).abs().to_numpy().max():.3f}")
