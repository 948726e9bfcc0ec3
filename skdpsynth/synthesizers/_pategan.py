"""PATE-GAN (Jordon, Yoon & van der Schaar 2019) with data-independent accounting."""

from __future__ import annotations

import logging
from numbers import Real

import numpy as np
import pandas as pd

from skdpsynth._grid import PublicGrid
from skdpsynth.base import BaseTabularSynthesizer, FitContext
from skdpsynth.privacy._pate import GNMaxAggregator, TeacherPartitions, pate_record, plan_pate
from skdpsynth.privacy._table import PrivateTable
from skdpsynth.synthesizers._gan_common import (
    GAN_CONSTRAINTS,
    POSITIVE_INT,
    GridEncoder,
    check_hidden_dims,
    progress,
)
from skdpsynth.utils._optional import deferred_import
from skdpsynth.utils._param_validation import Interval
from skdpsynth.utils._random import torch_seed

#: the torch networks, imported when a fit or sample first needs them (the ``deep`` extra)
_nets = deferred_import("skdpsynth.synthesizers._gan_nets", "PATEGANSynthesizer")

__all__ = ["PATEGANSynthesizer"]

_log = logging.getLogger(__name__)


class PATEGANSynthesizer(BaseTabularSynthesizer):
    """PATE-GAN: teachers on disjoint partitions, a student trained only on generated rows with noisy labels.

    Each iteration: every teacher (a logistic regression, restarted from zero)
    takes ``teacher_steps`` steps separating its own partition's rows from
    generated rows; a batch of ``batch_size`` generated rows is labelled by the
    teachers' votes, noised (Gaussian noisy argmax, GNMax). A teacher votes
    "real" on the queries it scores above its own median score on the batch
    (relative realness): absolute votes are all "fake" once the teachers
    separate generated from real rows, which leaves the student one class and
    the generator no gradient (the mode collapse of the earlier version). The
    student discriminator learns from a replay buffer of these generated rows
    and noisy labels only (``student_steps`` steps per iteration), and the
    generator learns to fool the student. Teachers are discarded after fitting.

    The accounting is data-independent (:mod:`skdpsynth.privacy._pate`): the
    number of answered queries, ``n_iter * batch_size``, is fixed in advance
    and every query is charged, up front (no data-dependent "smooth
    sensitivity" or moments bound, whose published implementations leaked;
    Ganev et al. 2024).

    Parameters
    ----------
    epsilon : float or None, default=1.0
        Budget per cohort. ``None`` = exact (noise-free) votes, not private.
    delta : float, default=1e-5
        The zCDP spend is converted at this delta (minus the domain's share).
    schema : TableSchema, dict, path or None, default=None
        Public domain; estimated under DP with ``domain_share`` of the budget when None.
    n_bins : int, default=16
        Bins per continuous column.
    n_teachers : int, default=50
        Number of teachers (disjoint partitions).
    n_iter : int, default=100
        Generator / student iterations.
    batch_size : int, default=64
        Generated rows labelled (queries) per iteration, and generator batch.
    teacher_steps : int, default=5
        Optimisation steps of every teacher per iteration.
    teacher_batch : int, default=64
        Rows each teacher draws (with replacement) from its partition per step.
    student_steps : int, default=10
        Student optimisation steps per iteration (on the replay buffer).
    buffer_iters : int, default=10
        The replay buffer holds the labelled queries of the last ``buffer_iters`` iterations.
    noise_dim : int, default=32
        Latent dimension.
    hidden_dims : tuple of int, default=(64, 64)
        Hidden layers of the generator and the student.
    learning_rate : float, default=1e-3
        Adam learning rate.
    count_share : float, default=0.02
        Share of the model's epsilon spent on a DP count of the people (``n_estimate_``).
    domain_share : float, default=0.1
        Share of epsilon and delta spent on the domain when ``schema`` is None.
    cohort_composition : {"parallel", "sequential"}, default="parallel"
        How ``partial_fit`` cohorts compose (``partial_fit`` continues training on the new cohort).
    random_state : int, Generator or None, default=None
        Seeds everything that is not privacy noise (initialisation, the
        teachers' row draws, generated rows, sampling).
    reproducible_noise : bool, default=False
        Derive the privacy noise (vote noise, teacher partition, the count)
        from ``random_state`` (for tests and papers only: such a release is not
        publishable). By default it comes from fresh OS entropy and nothing can
        regenerate it.
    verbose : bool or int, default=False
        When true, shows a tqdm progress bar over the iterations.

    Attributes
    ----------
    generator_ : torch.nn.Module
        The trained generator.
    vote_sigma_ : float
        Standard deviation of the discrete Gaussian noise on each vote count.
    n_queries_ : int
        Teacher queries answered in the last cohort.
    n_estimate_ : int
        DP count of the people of the last cohort (the exact count when ``epsilon=None``).

    Privacy
    -------
    Neighbouring relation: add/remove one person (one row). First the number of
    people is released with the geometric mechanism (L1 sensitivity 1,
    ``count_share`` of the model's epsilon); it sets ``n_estimate_`` only.
    Then the teacher votes (:mod:`skdpsynth.privacy._pate`), charged before
    the first query: the argument holds for any fixed partition of the people
    among the teachers -- adding or removing a person changes one teacher's
    partition and nothing else. Each row's teacher is an independent uniform
    draw from the secret noise source (a position-indexed draw from a known
    ``random_state`` would move later rows when one is removed; a secret
    data-independent draw makes the release a mixture over such fixed
    partitions, which keeps the guarantee). Each teacher's vote is a function
    of its own partition and of public (generated) rows: its row draws come
    from one public uniform array of fixed size (scaled to its own partition),
    and the median-split vote changes only with its partition. Per query the
    vote histogram (counts of "real" and "fake") therefore changes in at most
    one vote, L2 sensitivity ``sqrt(2)``; discrete Gaussian noise
    ``N_Z(0, sigma^2)`` on both integer counts is ``1 / sigma^2``-zCDP per
    query and the argmax is post-processing. ``T = n_iter * batch_size``
    queries compose to ``rho = T / sigma^2`` and ``sigma = sqrt(T / rho)`` is
    set so that ``rho`` is exactly the zCDP budget left after the domain
    estimate and the count. The generated rows the teachers see and the
    student's training are functions of earlier noisy answers only
    (post-processing and adaptive composition); the student and generator
    never see real rows.
    """

    _parameter_constraints: dict = {
        **BaseTabularSynthesizer._parameter_constraints,
        **GAN_CONSTRAINTS,
        "n_teachers": POSITIVE_INT,
        "n_iter": POSITIVE_INT,
        "batch_size": POSITIVE_INT,
        "teacher_steps": POSITIVE_INT,
        "teacher_batch": POSITIVE_INT,
        "student_steps": POSITIVE_INT,
        "buffer_iters": POSITIVE_INT,
        "count_share": [Interval(Real, 0, 1, closed="neither")],
        "cohort_composition": BaseTabularSynthesizer._COMPOSITION,
    }

    _requires = ("torch",)

    def __init__(self, *, epsilon=1.0, delta=1e-5, schema=None, n_bins=16, n_teachers=50, n_iter=100, batch_size=64,
                 teacher_steps=5, teacher_batch=64, student_steps=10, buffer_iters=10, noise_dim=32,
                 hidden_dims=(64, 64), learning_rate=1e-3, count_share=0.02, domain_share=0.1,
                 cohort_composition="parallel", random_state=None, reproducible_noise=False, verbose=False):
        self.epsilon = epsilon
        self.delta = delta
        self.schema = schema
        self.n_bins = n_bins
        self.n_teachers = n_teachers
        self.n_iter = n_iter
        self.batch_size = batch_size
        self.teacher_steps = teacher_steps
        self.teacher_batch = teacher_batch
        self.student_steps = student_steps
        self.buffer_iters = buffer_iters
        self.noise_dim = noise_dim
        self.hidden_dims = hidden_dims
        self.learning_rate = learning_rate
        self.count_share = count_share
        self.domain_share = domain_share
        self.cohort_composition = cohort_composition
        self.random_state = random_state
        self.reproducible_noise = reproducible_noise
        self.verbose = verbose

    def _check_request(self) -> None:
        super()._check_request()
        check_hidden_dims(self.hidden_dims)

    _takes_table = True

    def _fit_table(self, table: PrivateTable, ctx: FitContext) -> None:
        if ctx.first:
            self.grid_ = PublicGrid(self.schema_, self.n_bins)
            self.encoder_ = GridEncoder(self.grid_)
            self.generator_ = _nets.make_generator(self.noise_dim, tuple(self.hidden_dims), self.encoder_, ctx.rng)
            self.student_ = _nets.make_discriminator(self.encoder_.dim, tuple(self.hidden_dims), ctx.rng)
        aggregator = self._charge(table, ctx)
        self._train(table.teachers(self.encoder_.transform, self.n_teachers), aggregator, ctx)
        self.vote_sigma_ = aggregator.plan.sigma if aggregator is not None else 0.0
        self.n_queries_ = self.n_iter * self.batch_size

    def _charge(self, table: PrivateTable, ctx: FitContext) -> GNMaxAggregator | None:
        """DP count (``n_estimate_``), then the plan of all the vote queries, charged before the first one."""
        accountant = ctx.accountant
        n_queries = self.n_iter * self.batch_size
        target = f"{n_queries} teacher-vote queries (GNMax, {self.n_teachers} teachers)"
        if not table.private:
            self.n_estimate_ = max(table.count(), 1)  # exact: the release is marked non-private
            accountant.declare_nonprivate(target)
            return None
        self.n_estimate_ = max(table.count(epsilon=self.count_share * table.remaining_epsilon()), 1)
        plan = plan_pate(rho=table.remaining_rho(), queries=n_queries, n_teachers=self.n_teachers)
        accountant.spend(pate_record(plan, target))
        return GNMaxAggregator(plan, ctx.noise)

    def _train(self, teachers: TeacherPartitions, aggregator: GNMaxAggregator | None, ctx: FitContext) -> None:
        import torch

        k, dim, B = self.n_teachers, self.encoder_.dim, self.batch_size
        tgen = torch.Generator().manual_seed(torch_seed(ctx.rng))
        # k logistic-regression teachers, trained jointly (batched weights; Adam is per coordinate)
        w = torch.nn.Parameter(torch.zeros(k, dim, 1))
        b = torch.nn.Parameter(torch.zeros(k, 1, 1))
        gen, student = self.generator_, self.student_
        g_opt = torch.optim.Adam(gen.parameters(), lr=self.learning_rate, betas=(0.5, 0.9))
        s_opt = torch.optim.Adam(student.parameters(), lr=self.learning_rate, betas=(0.5, 0.9))
        # replay buffer of labelled queries (generated rows + noisy labels only: post-processing, free)
        buf_x, buf_y = torch.zeros(0, dim), torch.zeros(0, 1)
        cap = B * self.buffer_iters

        def draw_rows():
            # one public uniform array of fixed size, scaled to each teacher's own partition
            rows, has_rows = teachers.draw(ctx.rng.random((k, self.teacher_batch)))
            return torch.from_numpy(rows), torch.from_numpy(has_rows)[:, None, None]

        gen.train()
        for _ in progress(range(self.n_iter), self.verbose, "PATE-GAN", total=self.n_iter):
            self._train_teachers(w, b, draw_rows, tgen)
            queries = self._generated(B, tgen)
            labels = self._votes(w, b, queries, aggregator)
            buf_x, buf_y = torch.cat([buf_x, queries])[-cap:], torch.cat([buf_y, labels])[-cap:]
            s_loss = self._train_student(s_opt, buf_x, buf_y, ctx.rng)
            _log.debug("labels mean %.3f, student loss %.3f", float(labels.mean()), s_loss)
            self._train_generator(g_opt, tgen)
        gen.eval()

    def _generated(self, n: int, tgen, grad: bool = False):
        """Generated rows, one-hot like the real rows (straight-through Gumbel-softmax)."""
        import torch

        z = torch.randn(n, self.noise_dim, generator=tgen)
        if grad:
            return self.generator_(z, generator=tgen, hard=True)
        with torch.no_grad():
            return self.generator_(z, generator=tgen, hard=True)

    def _train_teachers(self, w, b, draw_rows, tgen) -> None:
        """Fresh teachers (own partition = real, generated = fake): they always judge the current generator."""
        import torch

        bce = torch.nn.functional.binary_cross_entropy_with_logits
        k, dim, tb = self.n_teachers, self.encoder_.dim, self.teacher_batch
        with torch.no_grad():
            w.zero_()
            b.zero_()
        t_opt = torch.optim.Adam([w, b], lr=self.learning_rate * 5)
        for _ in range(self.teacher_steps):
            real, has_data = draw_rows()  # (k, tb, dim), (k, 1, 1)
            fake = self._generated(tb, tgen).expand(k, tb, dim)  # one shared generated batch for every teacher
            lr_, lf_ = torch.baddbmm(b, real, w), torch.baddbmm(b, fake, w)
            loss_real = bce(lr_, torch.ones_like(lr_), reduction="none")
            loss_fake = bce(lf_, torch.zeros_like(lf_), reduction="none")
            loss = (loss_real * has_data).mean() + loss_fake.mean()
            t_opt.zero_grad()
            loss.backward()
            t_opt.step()

    def _votes(self, w, b, queries, aggregator: GNMaxAggregator | None):
        """Student labels: each teacher votes "real" above its own median on the batch; GNMax when private."""
        import torch

        k, B = self.n_teachers, len(queries)
        with torch.no_grad():
            logits = torch.baddbmm(b, queries.expand(k, B, queries.shape[1]), w)[:, :, 0]
            n_real = (logits > logits.median(dim=1, keepdim=True).values).sum(dim=0).numpy()
        labels = n_real > k - n_real if aggregator is None else aggregator.labels(n_real)
        return torch.from_numpy(labels.astype(np.float32))[:, None]

    def _train_student(self, s_opt, buf_x, buf_y, rng: np.random.Generator) -> float:
        """Several student steps on the replay buffer of labelled generated rows (no real rows)."""
        import torch

        s_loss = torch.zeros(())
        for _ in range(self.student_steps):
            idx = torch.from_numpy(rng.integers(len(buf_x), size=self.batch_size))
            s_opt.zero_grad()
            s_loss = torch.nn.functional.binary_cross_entropy_with_logits(self.student_(buf_x[idx]), buf_y[idx])
            s_loss.backward()
            s_opt.step()
        return float(s_loss.detach())

    def _train_generator(self, g_opt, tgen) -> None:
        """Generator step: fool the student."""
        import torch

        student = self.student_
        for p in student.parameters():
            p.requires_grad_(False)
        g_opt.zero_grad()
        logits = student(self._generated(self.batch_size, tgen, grad=True))
        torch.nn.functional.binary_cross_entropy_with_logits(logits, torch.ones(self.batch_size, 1)).backward()
        g_opt.step()
        for p in student.parameters():
            p.requires_grad_(True)

    def _sample_table(self, n_samples: int, rng: np.random.Generator) -> pd.DataFrame:
        return _nets.generate(self.generator_, self.encoder_, n_samples, self.noise_dim, rng)
