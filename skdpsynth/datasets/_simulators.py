"""Simulators of learner data with known structure (nothing private).

Three generators, each returning a :class:`sklearn.utils.Bunch`:

* :func:`make_learning_habits` -- the CAPS case-study schema (papers/caps.md): 4
  time-of-day engagement features per week x ``n_weeks`` weeks, three engagement
  classes each, and a three-class achievement label that depends on a latent
  learner model (so it is genuinely, but noisily, predictable).
* :func:`make_clickstream` -- ordered activity sequences whose outcome is carried
  *only by the order* of events: both outcome groups share the same stationary
  activity frequencies (and the same length distribution) but have different,
  mutually time-reversed, transition matrices. An order-free generator (e.g. an
  i.i.d. event-frequency model) therefore destroys all of the outcome signal.
* :func:`make_knowledge_tracing` -- skill/correctness sequences from Bayesian
  knowledge tracing (BKT) or a learning IRT model, so that the next response is
  predictable from the learner's history on the same skill.

All simulators are deterministic for an integer ``random_state``, never touch
global random generators, and are vectorised over learners (Python loops run
only over weeks or positions).

Each simulator lives in its own module (``_habits``, ``_clickstream``,
``_knowledge_tracing``; shared validation helpers in ``_sim_utils``); this module
gathers their public names.
"""

from skdpsynth.datasets._clickstream import OULAD_ACTIVITY_TYPES, make_clickstream
from skdpsynth.datasets._habits import ACHIEVEMENT_CLASSES, ENGAGEMENT_CLASSES, TIME_FRAMES, make_learning_habits
from skdpsynth.datasets._knowledge_tracing import make_knowledge_tracing

__all__ = [
    "make_learning_habits",
    "make_clickstream",
    "make_knowledge_tracing",
    "TIME_FRAMES",
    "ENGAGEMENT_CLASSES",
    "ACHIEVEMENT_CLASSES",
    "OULAD_ACTIVITY_TYPES",
]
