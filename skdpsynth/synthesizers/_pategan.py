"""PATE-GAN (Jordon, Yoon & van der Schaar 2019) with data-independent accounting."""

from __future__ import annotations

import logging
import math

import numpy as np

from skdpsynth._grid import PublicGrid
from skdpsynth.base import BaseTabularSynthesizer
from skdpsynth.privacy._accounting import BudgetAccountant, BudgetRecord
from skdpsynth.synthesizers._gan_common import (
    GridEncoder,
    check_gan_params,
    generate,
    make_discriminator,
    make_generator,
)
from skdpsynth.utils._random import torch_seed

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

    The accounting is data-independent: the number of answered queries,
    ``n_iter * batch_size``, is fixed in advance and every query is charged (no
    data-dependent "smooth sensitivity" or moments bound, whose published
    implementations leaked; Ganev et al. 2024).

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
    domain_share : float, default=0.1
        Share of epsilon and delta spent on the domain when ``schema`` is None.
    cohort_composition : {"parallel", "sequential"}, default="parallel"
        How ``partial_fit`` cohorts compose (``partial_fit`` continues training on the new cohort).
    random_state : int, Generator or None, default=None
        Seeds all randomness.

    Attributes
    ----------
    generator_ : torch.nn.Module
        The trained generator.
    vote_sigma_ : float
        Standard deviation of the Gaussian noise on each vote count.
    n_queries_ : int
        Teacher queries answered in the last cohort.

    Privacy
    -------
    Neighbouring relation: add/remove one person (one row). Every row is
    assigned to a teacher by an independent uniform draw, so adding or
    removing a person changes one teacher's partition and nothing else. For
    each query (a generated row), the vote histogram (counts of "real" and
    "fake" among the teachers) then changes in at most one vote: L2
    sensitivity ``sqrt(2)``. Adding ``N(0, sigma^2)`` to both counts is
    ``1 / sigma^2``-zCDP per query (Gaussian mechanism); the argmax is
    post-processing. Any vote rule that is a function of one teacher's
    partition and public (generated) rows keeps this: the median-split vote
    changes only with that teacher's partition. ``T = n_iter * batch_size`` queries compose to
    ``rho = T / sigma^2`` and ``sigma = sqrt(T / rho)`` is set so that ``rho``
    is exactly the zCDP budget left after the domain estimate. The generated
    rows the teachers see and the student's training are functions of earlier
    noisy answers only (post-processing and adaptive composition); the student
    and generator never see real rows.
    """

    def __init__(self, *, epsilon=1.0, delta=1e-5, schema=None, n_bins=16, n_teachers=50, n_iter=100, batch_size=64,
                 teacher_steps=5, teacher_batch=64, student_steps=10,
                 buffer_iters=10, noise_dim=32, hidden_dims=(64, 64), learning_rate=1e-3,
                 domain_share=0.1, cohort_composition="parallel", random_state=None):
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
        self.domain_share = domain_share
        self.cohort_composition = cohort_composition
        self.random_state = random_state

    def _check_input(self, X, y, reset):
        check_gan_params(self, ("n_bins", "n_teachers", "n_iter", "batch_size", "teacher_steps", "teacher_batch",
                                "student_steps", "buffer_iters", "noise_dim"), ("learning_rate",))
        return super()._check_input(X, y, reset)

    def _fit_table(self, X, accountant: BudgetAccountant, rngs, first):
        import torch

        if first:
            self.grid_ = PublicGrid(self.schema_, self.n_bins)
            self.encoder_ = GridEncoder(self.grid_)
            self.generator_ = make_generator(self.noise_dim, tuple(self.hidden_dims), self.encoder_, rngs["model"])
            self.student_ = make_discriminator(self.encoder_.dim, tuple(self.hidden_dims), rngs["model"])
        k, dim = self.n_teachers, self.encoder_.dim
        n_queries = self.n_iter * self.batch_size
        target = f"{n_queries} teacher-vote queries (GNMax, {k} teachers)"
        if accountant.private:
            spent_eps = sum(r.epsilon for r in accountant.records if r.kind in ("pure", "approx"))
            rho = accountant.remaining_rho(spent_pure=spent_eps)
            sigma = math.sqrt(n_queries / rho)
            accountant.spend(BudgetRecord(
                "gaussian noisy argmax", target, "zcdp", rho=n_queries / sigma ** 2, sensitivity=math.sqrt(2.0),
                noise_scale=sigma, details={"queries": n_queries, "n_teachers": k, "per_query_rho": 1 / sigma ** 2,
                                            "accounting": "data-independent"}))
        else:
            sigma = 0.0
            accountant.spend(BudgetRecord("exact (non-private)", target, "none", epsilon=math.inf))
        model_rng, noise_rng = rngs["model"], rngs["noise"]
        tgen = torch.Generator().manual_seed(torch_seed(model_rng))
        data = torch.from_numpy(self.encoder_.transform(X))
        part = model_rng.integers(k, size=len(X))  # independent uniform assignment per person
        members = [np.flatnonzero(part == t) for t in range(k)]
        sizes = np.array([len(m) for m in members])

        # k logistic-regression teachers, trained jointly (batched weights)
        w = torch.nn.Parameter(torch.zeros(k, dim, 1))
        b = torch.nn.Parameter(torch.zeros(k, 1, 1))
        gen, student = self.generator_, self.student_
        g_opt = torch.optim.Adam(gen.parameters(), lr=self.learning_rate, betas=(0.5, 0.9))
        s_opt = torch.optim.Adam(student.parameters(), lr=self.learning_rate, betas=(0.5, 0.9))
        bce = torch.nn.BCEWithLogitsLoss()
        tb, B = self.teacher_batch, self.batch_size
        has_data = torch.from_numpy((sizes > 0).astype(np.float32))[:, None, None]
        # replay buffer of labelled queries (generated rows + noisy labels only: post-processing, free)
        buf_x = torch.zeros(0, dim)
        buf_y = torch.zeros(0, 1)
        cap = B * self.buffer_iters

        def sample_gen(n, grad=False):
            z = torch.randn(n, self.noise_dim, generator=tgen)
            if grad:
                return gen(z, generator=tgen, hard=True)
            with torch.no_grad():
                return gen(z, generator=tgen, hard=True)

        gen.train()
        for _ in range(self.n_iter):
            # teachers: own partition (real) vs generated rows (one-hot like the real rows)
            with torch.no_grad():  # fresh teachers every iteration: they always judge the current generator
                w.zero_()
                b.zero_()
            t_opt = torch.optim.Adam([w, b], lr=self.learning_rate * 5)
            for _ in range(self.teacher_steps):
                pick = np.stack([m[model_rng.integers(len(m), size=tb)] if len(m) else np.zeros(tb, np.int64)
                                 for m in members])
                real = data[torch.from_numpy(pick)]  # (k, tb, dim)
                fake = sample_gen(tb).expand(k, tb, dim)  # one shared generated batch for every teacher
                lr_ = torch.baddbmm(b, real, w)
                lf_ = torch.baddbmm(b, fake, w)
                loss_real = torch.nn.functional.binary_cross_entropy_with_logits(lr_, torch.ones_like(lr_),
                                                                                 reduction="none")
                loss_fake = torch.nn.functional.binary_cross_entropy_with_logits(lf_, torch.zeros_like(lf_),
                                                                                 reduction="none")
                loss = ((loss_real * has_data).mean() + loss_fake.mean())
                t_opt.zero_grad()
                loss.backward()
                t_opt.step()
            # noisy teacher votes on generated rows -> student labels
            queries = sample_gen(B)
            with torch.no_grad():
                logits = torch.baddbmm(b, queries.expand(k, B, dim), w)[:, :, 0]
                # each teacher votes 'real' on the queries it scores above its own median on this batch
                n_real = (logits > logits.median(dim=1, keepdim=True).values).sum(dim=0).numpy().astype(float)
            n_fake = k - n_real
            if sigma > 0:
                n_real = n_real + noise_rng.normal(0.0, sigma, B)
                n_fake = n_fake + noise_rng.normal(0.0, sigma, B)
            labels = torch.from_numpy((n_real > n_fake).astype(np.float32))[:, None]
            buf_x = torch.cat([buf_x, queries])[-cap:]
            buf_y = torch.cat([buf_y, labels])[-cap:]
            # student: several steps on the buffer of labelled generated rows
            for _ in range(self.student_steps):
                idx = torch.from_numpy(model_rng.integers(len(buf_x), size=B))
                s_opt.zero_grad()
                s_loss = bce(student(buf_x[idx]), buf_y[idx])
                s_loss.backward()
                s_opt.step()
            _log.debug("labels mean %.3f, student loss %.3f", float(labels.mean()), float(s_loss))
            # generator: fool the student
            for p in student.parameters():
                p.requires_grad_(False)
            g_opt.zero_grad()
            g_loss = bce(student(sample_gen(B, grad=True)), torch.ones(B, 1))
            g_loss.backward()
            g_opt.step()
            for p in student.parameters():
                p.requires_grad_(True)
        gen.eval()
        self.vote_sigma_ = float(sigma)
        self.n_queries_ = n_queries

    def _sample_table(self, n_samples, rng):
        return generate(self.generator_, self.encoder_, n_samples, self.noise_dim, rng)
