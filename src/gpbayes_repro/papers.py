"""One record per reproduced paper: what the claims page, the verdict table and the workflow read.

Adding a paper is its experiment module (``experiments/<key>.py``), its rules file
(``workflow/rules/<rules>.smk``, included by the Snakefile), its config block (with
its schema) and one :class:`Paper` record here.  ``tests/test_papers.py`` checks that
every record has its rules file included, its claims file listed by the workflow, its
config block and its results directories, so a record cannot be half added.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Paper", "REGISTRY", "by_key", "claims_target"]


@dataclass(frozen=True)
class Paper:
    """A reproduced paper (or the foundation slice).

    ``key``: the claims file's name (``results/claims/<key>.json``) and the claims page's anchor;
    ``title``: the claims page's heading; ``config``: its block in ``config/config.yaml``;
    ``rules``: its rules file under ``workflow/rules/``; ``results_dirs``: the directories under
    ``results/`` its runs write (where the numerical-trouble scan attributes a run);
    ``paper_scale_cpu_hours``: the estimated CPU-hours of its experiments at ``scale=paper``
    on one core of the project's machine (measured where the note says so).
    """

    key: str
    title: str
    config: str
    rules: str
    results_dirs: tuple[str, ...]
    paper_scale_cpu_hours: float
    cost_note: str = ""


REGISTRY: tuple[Paper, ...] = (
    Paper("foundation", "Foundation slice: exact-marginal random-walk MH for GP regression (Boston Housing, ARD)",
          "regression_mh", "regression_mh", ("regression_mh",), 0.98,
          "measured: the whole paper-scale run, 3,494 CPU-s (2026-11-25)"),
    Paper("pm_gpc", "Filippone & Girolami (2014), Pseudo-marginal Bayesian inference for Gaussian processes",
          "pm_gpc", "pm_gpc", ("pm_gpc",), 233.0, "Table I 8 + Table III 60 + Figs. 3-4 125 + Figs. 5-7 40"),
    Paper("slice_ma", "Murray & Adams (2010), Slice sampling covariance hyperparameters of latent Gaussian models",
          "slice_ma", "slice_ma", ("slice",), 20.0),
    Paper("amis", "Xiong, Šmídl & Filippone, Adaptive multiple importance sampling for Gaussian processes",
          "amis", "amis", ("amis",), 800.0, "rough: full Concrete x 28,000 O(n^3) operations per run"),
    Paper("sparse_mcmc",
          "Hensman, Matthews, Filippone & Ghahramani (2015), MCMC for variationally sparse Gaussian processes",
          "sparse_mcmc", "sparse_mcmc", ("sparse",), 60.0),
    Paper("gplvm", "Gadd, Wade, Shah & Grammatopoulos, Pseudo-marginal Bayesian inference for supervised GPLVMs",
          "gplvm", "gplvm", ("gplvm",), 5.0, "1.6 CPU-s per iteration measured with the paper's 500 VB iterations"),
)


def by_key() -> dict[str, Paper]:
    """``key -> Paper`` in registry order."""
    return {p.key: p for p in REGISTRY}


def claims_target(paper: Paper) -> str:
    """The workflow target of a paper's claims file."""
    return f"results/claims/{paper.key}.json"
