"""Xiong et al. (AMIS) replicate design: which run blocks exist at each look (issue 26 section 4).

Light on purpose (standard library only): the workflow's rules file imports it while
Snakemake builds the DAG.  The statistics of a look live in
``gpbayes_repro.experiments.amis.analysis.sequential_decisions``.
"""

from __future__ import annotations

import json

__all__ = ["task_of", "looks", "cap", "counts", "initial_blocks", "run_file", "runs_at", "CONFIRM_FAMILIES",
           "confirm_samplers", "confirm_blocks", "confirm_file"]


def task_of(sampler: str) -> str:
    """"classification" for the pseudo-marginal samplers (``pm_*``), else "regression"."""
    return "classification" if sampler.startswith("pm_") else "regression"


def looks(seq: dict) -> int:
    """Planned looks J of the design ``seq`` ({"looks", "regression": {"start", "block"}, "classification": ...})."""
    return int(seq["looks"])


def counts(seq: dict, task: str) -> list[int]:
    """Replicates per sampler at each look: start, start + block, ..., the cap."""
    s = seq[task]
    start, block, n_looks = int(s["start"]), int(s["block"]), looks(seq)
    if start < 2 or block < 1 or n_looks < 1 or start % block:
        raise ValueError(f"amis sequential design for {task}: start >= 2 and a multiple of block >= 1, looks >= 1 "
                         f"required, got {s} and looks={n_looks}")
    return [start + j * block for j in range(n_looks)]


def cap(seq: dict, task: str) -> int:
    """Replicates per sampler at the last look (the paper's 100 / 20 at paper scale)."""
    return counts(seq, task)[-1]


def initial_blocks(seq: dict, sampler: str) -> int:
    """Blocks (Snakemake jobs) of ``sampler`` before the first look."""
    t = seq[task_of(sampler)]
    return int(t["start"]) // int(t["block"])


def run_file(dataset: str, kernel: str, sampler: str, block: int) -> str:
    return f"results/amis/runs/{dataset}_{kernel}_{sampler}_block{block}.nc"


def runs_at(keys, seq: dict, look: int, plan_of) -> list[str]:
    """Run blocks present at look ``look`` (0-based).

    ``keys``: every (dataset, kernel, sampler) run; ``plan_of(j)``: the path of look j's
    plan (``{"extend": [[dataset, kernel, sampler], ...]}``, the checkpoint's output).
    The first blocks of every key, then one more per key each earlier look extends.
    """
    nb = {tuple(k): initial_blocks(seq, k[2]) for k in keys}
    files = [run_file(*k, b) for k in nb for b in range(nb[k])]
    for j in range(int(look)):
        with open(plan_of(j)) as fh:
            plan = json.load(fh)
        for key in map(tuple, plan["extend"]):
            files.append(run_file(*key, nb[key]))
            nb[key] += 1
    return files


# --- a confirmatory block (issue 32): fresh replicates that decide a claim the sequential design left open ---
#: the sampler name prefixes a claim-1-style comparison reads: the AMIS family members and every MCMC family
CONFIRM_FAMILIES = {"claim1": ("amis", "mamis", "mh", "hmc", "nuts", "nutsda", "slice")}


def confirm_samplers(claim: str, samplers) -> list[str]:
    """The samplers (of a kernel's list) whose replicates claim ``claim``'s comparisons read.

    Claim 1 compares AMIS and MAMIS (full covariance; the diagonal and -P variants are not in it) with every MCMC
    sampler: the names ``amis``, ``mamis`` and every ``mh_*``, ``hmc_*``, ``nuts_*``, ``nutsda_*``, ``slice``.
    """
    if claim not in CONFIRM_FAMILIES:
        raise ValueError(f"amis confirmatory block: claim must be one of {sorted(CONFIRM_FAMILIES)}, got {claim!r}")
    fams = CONFIRM_FAMILIES[claim]
    return [s for s in samplers if s in ("amis", "mamis") or (s not in ("amis_d", "mamis_d", "mamis_p", "amis_mamis")
                                                            and s.split("_")[0] in fams)]


def confirm_blocks(spec: dict) -> list[int]:
    """Block indices of a confirmatory block ``spec`` ({"first_replicate", "replicates", "block"}).

    Block ``b`` holds replicates ``b * block`` to ``b * block + block - 1``: the block starts at the first
    replicate the sequential design never ran (``first_replicate``, a multiple of ``block``), so its random
    streams are disjoint from every replicate already seen.
    """
    first, n, per = int(spec["first_replicate"]), int(spec["replicates"]), int(spec["block"])
    if per < 1 or n < per or first < 0 or first % per or n % per:
        raise ValueError(f"amis confirmatory block: first_replicate >= 0 and replicates >= block >= 1, both multiples "
                         f"of block, required, got {spec}")
    return list(range(first // per, (first + n) // per))


def confirm_file(dataset: str, kernel: str, sampler: str, block: int) -> str:
    return f"results/amis/confirm/runs/{dataset}_{kernel}_{sampler}_block{block}.nc"
