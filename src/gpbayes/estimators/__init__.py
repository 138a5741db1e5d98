"""Estimators of intractable quantities: unbiased marginal-likelihood estimates (F&G 2014 eq. 25)."""

from .grid import log_marginal_estimates_on_grid
from .importance import (
    ImportanceSample,
    PseudoMarginalTarget,
    choose_n_imp,
    covariance_and_factor,
    importance_log_marginal,
    importance_log_weights,
    importance_sample,
    log_estimate_sd,
    predicted_n_imp,
    select_draw,
)

__all__ = [
    "importance_log_marginal",
    "importance_log_weights",
    "importance_sample",
    "ImportanceSample",
    "select_draw",
    "covariance_and_factor",
    "PseudoMarginalTarget",
    "log_marginal_estimates_on_grid",
    "choose_n_imp",
    "log_estimate_sd",
    "predicted_n_imp",
]
