"""Which indices a job or a summary takes: blocks of chains/replicates, evenly spaced draws.

Every paper splits its chains (or replicates) into Snakemake jobs of
``per_job`` each; chain c always draws from its own random stream, so the
split never changes a draw.  One function for all of them.
"""

from __future__ import annotations

import numpy as np

__all__ = ["block_range", "block_chains", "block_replicates", "same_block", "evenly_spaced"]


def block_range(block: int, n_total: int, per_job: int, what: str = "chains") -> range:
    """Global indices run by job ``block`` (the last block may be short); an empty block is an error."""
    block, n_total, per_job = int(block), int(n_total), int(per_job)
    if per_job < 1:
        raise ValueError(f"{what} per job must be >= 1, got {per_job}")
    lo = block * per_job
    if block < 0 or lo >= n_total:
        raise ValueError(f"block {block} is empty: {n_total} {what}, {per_job} per job")
    return range(lo, min(lo + per_job, n_total))


def same_block(block: int, n_a: int, n_b: int, per_job: int) -> bool:
    """Whether job ``block`` holds the same indices when the total is ``n_a`` as when it is ``n_b``.

    A block both totals leave non-empty and cut at the same end is the same job (the decide scale
    reuses a default run's block when its cap grows: blocks 0..k-1 of ``per_job`` are unchanged, a
    short last block is not).  A block either total leaves empty is not the same.
    """
    def indices(n):
        try:
            return block_range(block, n, per_job)
        except ValueError:
            return None

    a = indices(n_a)
    return a is not None and a == indices(n_b)


def block_chains(block: int, n_chains: int, chains_per_job: int) -> range:
    """``block_range`` over chains."""
    return block_range(block, n_chains, chains_per_job, "chains")


def block_replicates(block: int, n_replicates: int, per_job: int) -> range:
    """``block_range`` over replicates (Xiong et al.'s repeated runs)."""
    return block_range(block, n_replicates, per_job, "replicates")


def evenly_spaced(n_total: int, n_keep: int) -> np.ndarray:
    """At most ``n_keep`` evenly spaced indices into 0..n_total-1, first and last included (predictive draws)."""
    return np.unique(np.round(np.linspace(0, n_total - 1, min(int(n_keep), n_total))).astype(int))
