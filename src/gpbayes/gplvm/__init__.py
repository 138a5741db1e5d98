"""Supervised GPLVM with pseudo-marginal inference (Gadd et al.).

psi_stats        SE-ARD Psi-statistics under a Gaussian q(Z), with gradients
vb               the model, the variational bound (Alg. 1), type-II ML
pseudo_marginal  eq. 6 estimator, Alg. 2 (adaptive PM MH-within-Gibbs),
                 Alg. 3 (elliptical slice sampling of Z), eqs. 7-8 predictions
"""

from .psi_stats import PsiGradients, PsiStats, psi_stats, psi_stats_vjp
from .vb import (
    BoundGradients,
    LatentPosterior,
    MLResult,
    SupervisedGPLVM,
    VariationalParams,
    VBResult,
    elbo,
    fit_type2_ml,
    initial_variational,
    latent_posterior,
    optimise_variational,
)
from . import pseudo_marginal

__all__ = [
    "PsiGradients",
    "PsiStats",
    "psi_stats",
    "psi_stats_vjp",
    "BoundGradients",
    "LatentPosterior",
    "MLResult",
    "SupervisedGPLVM",
    "VariationalParams",
    "VBResult",
    "elbo",
    "fit_type2_ml",
    "initial_variational",
    "latent_posterior",
    "optimise_variational",
    "pseudo_marginal",
]
