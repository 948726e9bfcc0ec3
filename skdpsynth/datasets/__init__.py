"""Datasets: loaders for real public education datasets and simulators of learner data.

Loaders read a local copy (``path=``), a cache folder (``data_home``) or download
from the publisher; each returns a :class:`sklearn.utils.Bunch` with a public
:class:`~skdpsynth.TableSchema` written from the dataset's documentation.
Simulators generate data with known structure (nothing private).
"""

from skdpsynth.datasets._fetch import DatasetNotFoundError, fetch_dataset, get_data_home, list_datasets
from skdpsynth.datasets._loaders import load_adult, load_dataset, load_oulad, load_uci_dropout, load_uci_hesp
from skdpsynth.datasets._schemas import (
    adult_schema,
    oulad_student_info_schema,
    uci_dropout_schema,
    uci_hesp_schema,
)
from skdpsynth.datasets._simulators import (
    ACHIEVEMENT_CLASSES,
    ENGAGEMENT_CLASSES,
    OULAD_ACTIVITY_TYPES,
    TIME_FRAMES,
    make_clickstream,
    make_knowledge_tracing,
    make_learning_habits,
)

__all__ = [
    "load_adult",
    "load_uci_dropout",
    "load_uci_hesp",
    "load_oulad",
    "load_dataset",
    "list_datasets",
    "fetch_dataset",
    "get_data_home",
    "DatasetNotFoundError",
    "adult_schema",
    "uci_dropout_schema",
    "uci_hesp_schema",
    "oulad_student_info_schema",
    "make_learning_habits",
    "make_clickstream",
    "make_knowledge_tracing",
    "TIME_FRAMES",
    "ENGAGEMENT_CLASSES",
    "ACHIEVEMENT_CLASSES",
    "OULAD_ACTIVITY_TYPES",
]
