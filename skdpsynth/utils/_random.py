"""Independent random streams derived from ``random_state``.

Every source of randomness in skdpsynth (privacy noise, batching, model
initialisation, sampling) gets its own child stream of one
:class:`numpy.random.SeedSequence`, so that e.g. drawing more synthetic rows never
changes the privacy noise. Global generators are never seeded nor drawn from.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

RandomStateLike = int | np.random.Generator | np.random.RandomState | np.random.SeedSequence | None


def _seed_sequence(random_state: RandomStateLike) -> np.random.SeedSequence:
    if random_state is None:
        return np.random.SeedSequence()
    if isinstance(random_state, np.random.SeedSequence):
        return random_state
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state must be a non-negative integer, got {random_state}.")
        return np.random.SeedSequence(int(random_state))
    if isinstance(random_state, np.random.Generator):
        # Draw entropy from the user's generator: advances it, as sklearn does.
        return np.random.SeedSequence(random_state.integers(0, 2**63, size=4).tolist())
    if isinstance(random_state, np.random.RandomState):
        return np.random.SeedSequence(random_state.randint(0, 2**31 - 1, size=4).tolist())
    raise ValueError(
        "random_state must be None, an int, a numpy Generator, RandomState or SeedSequence; "
        f"got {type(random_state).__name__}."
    )


def cohort_seed_sequence(random_state: RandomStateLike, index: int) -> np.random.SeedSequence:
    """The seed of one ``fit`` / ``partial_fit`` call (``index`` = cohort; -1 = the sampling stream).

    Derived afresh from ``random_state`` on each call and never stored: an int
    or SeedSequence gives the same stream for the same index; ``None`` gives
    fresh OS entropy; a Generator or RandomState is advanced.
    """
    key = int(index) + 1
    if isinstance(random_state, np.random.SeedSequence):
        return np.random.SeedSequence(random_state.entropy, spawn_key=(*random_state.spawn_key, key))
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        return np.random.SeedSequence(_seed_sequence(random_state).entropy, spawn_key=(key,))
    return _seed_sequence(random_state)


def check_random_state(random_state: RandomStateLike) -> np.random.Generator:
    """Turn ``random_state`` into a :class:`numpy.random.Generator`.

    Parameters
    ----------
    random_state : None, int, Generator, RandomState or SeedSequence
        ``None`` draws fresh OS entropy; an int gives a reproducible stream; a
        Generator or RandomState is advanced to seed a new stream.

    Returns
    -------
    numpy.random.Generator
    """
    return np.random.Generator(np.random.PCG64(_seed_sequence(random_state)))


def spawn_generators(random_state: RandomStateLike, names: Sequence[str]) -> dict[str, np.random.Generator]:
    """Independent named generators from one ``random_state``.

    Parameters
    ----------
    random_state : None, int, Generator, RandomState or SeedSequence
        The root of all streams.
    names : sequence of str
        One generator per name, in a fixed order (the order defines the streams).

    Returns
    -------
    dict of str to numpy.random.Generator
    """
    children = _seed_sequence(random_state).spawn(len(names))
    return {name: np.random.Generator(np.random.PCG64(ss)) for name, ss in zip(names, children)}


def torch_seed(rng: np.random.Generator) -> int:
    """A seed for a ``torch.Generator`` drawn from a numpy stream (never from data)."""
    return int(rng.integers(0, 2**62))
