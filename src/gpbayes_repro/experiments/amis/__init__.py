"""Xiong, Smidl & Filippone: AMIS for GP hyperparameters -- the experiments.

Stages (each a Snakemake rule calling one function here):

1. ``setup``       per (data set, kernel): the Gaussian approximation
                   N(m, (-H)^{-1}) at the posterior mode (L-BFGS in log space;
                   Hessian by finite differences of the gradient, or of the
                   approximate LA/EP log marginal for classification).  It is
                   AMIS's q_0, the MH/HMC proposal/mass shapes and the
                   distribution the MCMC starting points are drawn from
                   (Sec. 4.3.1).  Its cost is shared by all samplers and, as in
                   the paper, not counted.
2. ``run_block``   a block of replicates of one sampler on one (data set,
                   kernel): per replicate the running estimate of E[||theta||]
                   (theta = exp(psi), the kernel and noise parameters on their
                   natural scale) against cumulative O(n^3) operations and
                   wall seconds, with the tuning cost (paper's "end of tuning").
3. ``reference``   one long AMIS run per regression (data set, kernel): the
                   reference value of E[||theta||]; it also measures the share
                   of AMIS wall time spent outside target evaluations.
3b. ``classification_reference``  one long PM-AMIS run (EP, N_imp = 64) per
                   classification (data set, kernel): the reference E[||theta||]
                   of the exact (pseudo-marginal) posterior.
4. ``curves``      IQR (and median, quartiles) across replicates on a log grid
                   of costs, per (data set, kernel, sampler).
5. ``ops_to_reach`` / figures / ``claims``.

Cost accounting (Sec. 4.4): one O(n^3) operation per exact marginal (AMIS,
MAMIS, MH, slice), three per marginal-plus-gradient (HMC, NUTS, NUTS-DA:
``hmc.PAPER_CUBIC_PER_GRAD_EVAL``); the pseudo-marginal methods count the
Cholesky factorisations of K and of the LA/EP approximation actually done
(``gpbayes.linalg``), tuning included.

The stages live in ``runs`` (1-3), ``analysis`` (4-5) and ``figures``;
this package re-exports their names.
"""

from . import analysis, figures, runs
from .analysis import (cost_grid, curves, final_iqr, ops_to_reach, iqr_at, MCMC_FAMILIES, ops_to_reach_table, claims, median_interval, replicate_matrices, chain_convergence, BOOTSTRAP_METHOD, SEQUENTIAL_METHOD, sequential_design, sequential_decisions, sequential_records, confirmatory_decision, apply_confirmatory)  # noqa: F401 (re-exported)
from .figures import (LABELS, label, plot_panels, best_of, references_table, classification_references_table, fig1, appendix, fig2, fig_nimp, tuning_table)  # noqa: F401 (re-exported)
from .runs import (REGRESSION_SAMPLERS, family, parse_sampler, sampler_cost, block_replicates, load_data, build_prior, regression_model, classification_target, setup, thin_indices, run_block, bookkeeping_timings, reference, classification_reference)  # noqa: F401 (re-exported)

__all__ = [*runs.__all__, *analysis.__all__, *figures.__all__]
