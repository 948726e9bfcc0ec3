"""Non-private CTGAN and TVAE (the ``ctgan`` package, SDV) behind the skdpsynth interface."""

from __future__ import annotations

from abc import abstractmethod
from numbers import Integral

import numpy as np
import pandas as pd

from skdpsynth._grid import seconds_to_datetime
from skdpsynth.base import BaseTabularSynthesizer, FitContext
from skdpsynth.privacy import PrivateTable
from skdpsynth.utils._optional import import_optional
from skdpsynth.utils._param_validation import Interval

__all__ = ["CTGANSynthesizer", "TVAESynthesizer"]

_MISSING = "__missing__"
_POSITIVE_INT = [Interval(Integral, 1, None, closed="left")]
#: the tabular base's parameters less ``domain_share`` (the domain is read from the data: not private anyway)
_ADAPTER_CONSTRAINTS = {k: v for k, v in BaseTabularSynthesizer._parameter_constraints.items() if k != "domain_share"}


def _import_ctgan():
    return import_optional("ctgan", "CTGANSynthesizer / TVAESynthesizer")


class _CTGANAdapter(BaseTabularSynthesizer):
    """Shared adapter: schema-normalised table <-> the frame ``ctgan`` expects.

    Categorical and boolean columns become strings (missing = a category of its
    own); numeric columns are floats (datetimes as seconds); a nullable numeric
    column with missing values gets a discrete missing-indicator column and its
    missing values are filled with the column's lower bound before training.
    Samples are clipped into the schema's bounds.

    Nothing here is private: every cohort is recorded as non-private
    (``declare_nonprivate``) and ``n_estimate_`` is the exact number of rows,
    which such a release does not protect.
    """

    _model_name = ""
    _requires = ("ctgan",)

    def _check_request(self) -> None:
        super()._check_request()
        if self.epsilon is not None:
            raise ValueError(
                f"{type(self).__name__} is not differentially private: epsilon must be None, got {self.epsilon!r}. "
                "Use DPCTGANSynthesizer, PATEGANSynthesizer, MSTSynthesizer or NPGCSynthesizer for a DP release."
            )
        _import_ctgan()

    def _to_frame(self, X: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
        cols, discrete = {}, []
        for spec in self.schema_.columns:
            col = X[spec.name]
            if spec.kind in ("categorical", "boolean"):
                cols[spec.name] = col.map(lambda v: _MISSING if pd.isna(v) else str(v)).astype(object)
                discrete.append(spec.name)
                continue
            if spec.kind == "datetime":
                x = pd.to_datetime(col).astype("datetime64[ns]").astype("int64").to_numpy().astype(float) / 1e9
                x[col.isna().to_numpy()] = np.nan
            else:
                x = col.to_numpy(dtype=float)
            isna = np.isnan(x)
            lo = spec.numeric_bounds[0]
            cols[spec.name] = np.where(isna, lo, x)
            if spec.nullable:
                cols[f"{spec.name}{_MISSING}"] = np.where(isna, "1", "0").astype(object)
                discrete.append(f"{spec.name}{_MISSING}")
        return pd.DataFrame(cols), discrete

    def _from_frame(self, frame: pd.DataFrame) -> pd.DataFrame:
        out = {}
        for spec in self.schema_.columns:
            col = frame[spec.name]
            if spec.kind in ("categorical", "boolean"):
                lookup = {str(c): c for c in spec.categories}
                out[spec.name] = np.array([lookup.get(v, np.nan) for v in col.astype(str)], dtype=object)
                continue
            x = col.to_numpy(dtype=float)
            lo, hi = spec.numeric_bounds
            x = np.clip(x, lo, hi)
            if spec.nullable and f"{spec.name}{_MISSING}" in frame:
                x[frame[f"{spec.name}{_MISSING}"].astype(str).to_numpy() == "1"] = np.nan
            if spec.kind == "integer":
                x = np.round(x)
            if spec.kind == "datetime":
                out[spec.name] = seconds_to_datetime(x).to_numpy()
            else:
                out[spec.name] = x
        return pd.DataFrame(out)

    @abstractmethod
    def _make_model(self, ctgan):
        """A fresh ``ctgan`` model configured from the parameters."""

    _takes_table = True

    def _fit_table(self, table: PrivateTable, ctx: FitContext) -> None:
        ctgan = _import_ctgan()
        X = table.nonprivate_rows(f"{self._model_name} trained on the data")  # epsilon is None: not DP
        frame, discrete = self._to_frame(X)
        if ctx.first or not hasattr(self, "model_"):
            self.model_ = self._make_model(ctgan)
        self.model_.set_random_state(int(ctx.rng.integers(2**31 - 1)))
        self.model_.fit(frame, discrete_columns=discrete)
        self.model_.set_random_state(None)
        self.n_estimate_ = max(len(X), 1)  # exact: the release is marked non-private

    def _sample_table(self, n_samples: int, rng: np.random.Generator) -> pd.DataFrame:
        self.model_.set_random_state(int(rng.integers(2**31 - 1)))
        try:
            frame = self.model_.sample(n_samples)
        finally:
            self.model_.set_random_state(None)
        return self._from_frame(frame)


class CTGANSynthesizer(_CTGANAdapter):
    """CTGAN (Xu et al. 2019) from the ``ctgan`` package -- NOT differentially private.

    A peer for speed and fidelity comparisons. The ``ctgan`` package fits
    Gaussian mixtures and category frequencies on the data, so nothing about
    it is private; ``epsilon`` must stay ``None`` and the budget log records a
    non-private computation.

    Parameters
    ----------
    epsilon : None
        Must be None (not private).
    delta : float, default=0.0
        Unused (kept for the common interface).
    schema : TableSchema, dict, path or None, default=None
        Domain; read from the data (non-private) when None.
    epochs : int, default=300
        Training epochs.
    batch_size : int, default=500
        Must be a multiple of ``pac``.
    pac : int, default=10
        PacGAN packing.
    embedding_dim : int, default=128
        Latent dimension.
    generator_dim, discriminator_dim : tuple of int, default=(256, 256)
        Hidden layers.
    cohort_composition : {"parallel", "sequential"}, default="parallel"
        Kept for the interface; ``partial_fit`` retrains on the new cohort.
    random_state : int, Generator or None, default=None
        Seeds training and sampling (``ctgan`` sets, then restores, the global NumPy / torch states).
    reproducible_noise : bool, default=False
        Kept for the common interface: there is no privacy noise here.

    Privacy
    -------
    None: every cohort is recorded as ``kind="none"`` (epsilon infinite);
    ``n_estimate_`` is the exact number of rows.
    """

    _model_name = "CTGAN"
    _parameter_constraints: dict = {
        **_ADAPTER_CONSTRAINTS,
        "epochs": _POSITIVE_INT,
        "batch_size": _POSITIVE_INT,
        "pac": _POSITIVE_INT,
        "embedding_dim": _POSITIVE_INT,
        "generator_dim": [tuple, list],
        "discriminator_dim": [tuple, list],
        "cohort_composition": BaseTabularSynthesizer._COMPOSITION,
    }

    def __init__(self, *, epsilon=None, delta=0.0, schema=None, epochs=300, batch_size=500, pac=10, embedding_dim=128,
                 generator_dim=(256, 256), discriminator_dim=(256, 256), cohort_composition="parallel",
                 random_state=None, reproducible_noise=False):
        self.epsilon = epsilon
        self.delta = delta
        self.schema = schema
        self.epochs = epochs
        self.batch_size = batch_size
        self.pac = pac
        self.embedding_dim = embedding_dim
        self.generator_dim = generator_dim
        self.discriminator_dim = discriminator_dim
        self.cohort_composition = cohort_composition
        self.random_state = random_state
        self.reproducible_noise = reproducible_noise

    def _check_request(self) -> None:
        super()._check_request()
        if self.batch_size % self.pac:
            raise ValueError(f"batch_size ({self.batch_size!r}) must be a multiple of pac ({self.pac!r}).")

    def _make_model(self, ctgan):
        return ctgan.CTGAN(embedding_dim=self.embedding_dim, generator_dim=tuple(self.generator_dim),
                           discriminator_dim=tuple(self.discriminator_dim), batch_size=self.batch_size,
                           epochs=self.epochs, pac=self.pac, enable_gpu=False)


class TVAESynthesizer(_CTGANAdapter):
    """TVAE (Xu et al. 2019) from the ``ctgan`` package -- NOT differentially private.

    Parameters
    ----------
    epsilon : None
        Must be None (not private).
    delta : float, default=0.0
        Unused (kept for the common interface).
    schema : TableSchema, dict, path or None, default=None
        Domain; read from the data (non-private) when None.
    epochs : int, default=300
        Training epochs.
    batch_size : int, default=500
        Batch size.
    embedding_dim : int, default=128
        Latent dimension.
    compress_dims, decompress_dims : tuple of int, default=(128, 128)
        Encoder / decoder hidden layers.
    cohort_composition : {"parallel", "sequential"}, default="parallel"
        Kept for the interface; ``partial_fit`` retrains on the new cohort.
    random_state : int, Generator or None, default=None
        Seeds training and sampling.
    reproducible_noise : bool, default=False
        Kept for the common interface: there is no privacy noise here.

    Privacy
    -------
    None: every cohort is recorded as ``kind="none"`` (epsilon infinite);
    ``n_estimate_`` is the exact number of rows.
    """

    _model_name = "TVAE"
    _parameter_constraints: dict = {
        **_ADAPTER_CONSTRAINTS,
        "epochs": _POSITIVE_INT,
        "batch_size": _POSITIVE_INT,
        "embedding_dim": _POSITIVE_INT,
        "compress_dims": [tuple, list],
        "decompress_dims": [tuple, list],
        "cohort_composition": BaseTabularSynthesizer._COMPOSITION,
    }

    def __init__(self, *, epsilon=None, delta=0.0, schema=None, epochs=300, batch_size=500, embedding_dim=128,
                 compress_dims=(128, 128), decompress_dims=(128, 128), cohort_composition="parallel",
                 random_state=None, reproducible_noise=False):
        self.epsilon = epsilon
        self.delta = delta
        self.schema = schema
        self.epochs = epochs
        self.batch_size = batch_size
        self.embedding_dim = embedding_dim
        self.compress_dims = compress_dims
        self.decompress_dims = decompress_dims
        self.cohort_composition = cohort_composition
        self.random_state = random_state
        self.reproducible_noise = reproducible_noise

    def _make_model(self, ctgan):
        return ctgan.TVAE(embedding_dim=self.embedding_dim, compress_dims=tuple(self.compress_dims),
                          decompress_dims=tuple(self.decompress_dims), batch_size=self.batch_size,
                          epochs=self.epochs, enable_gpu=False)
