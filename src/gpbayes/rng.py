"""Random streams keyed by experiment.

Every random draw in gpbayes comes from an explicit ``numpy.random.Generator``.
Streams for a chain or replicate are derived from one integer seed and a
tuple of keys (experiment name, data set, method, chain index, ...), so that
adding an experiment or a chain never changes the numbers of another:

    rng = stream(seed, "housing_mh", "chain", 3)

String keys are hashed with SHA-256 (stable across processes and Python
versions, unlike ``hash``) into the ``spawn_key`` of a ``SeedSequence``.
"""

from __future__ import annotations

import hashlib

import numpy as np

__all__ = ["stream", "seed_sequence"]


def _key_to_int(key) -> int:
    if isinstance(key, (bool, np.bool_)):
        raise TypeError("boolean stream keys are ambiguous; use a string or int")
    if isinstance(key, (int, np.integer)):
        if key < 0:
            raise ValueError(f"integer stream keys must be >= 0, got {key}")
        return int(key)
    if isinstance(key, str):
        return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "little")
    raise TypeError(f"stream keys must be str or int, got {type(key).__name__}")


def seed_sequence(seed: int, *keys) -> np.random.SeedSequence:
    """The SeedSequence for ``(seed, *keys)``."""
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return np.random.SeedSequence(int(seed), spawn_key=tuple(_key_to_int(k) for k in keys))


def stream(seed: int, *keys) -> np.random.Generator:
    """A PCG64 generator for ``(seed, *keys)``."""
    return np.random.Generator(np.random.PCG64(seed_sequence(seed, *keys)))
