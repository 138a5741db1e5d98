"""Estimators of intractable quantities: unbiased marginal-likelihood estimates."""

from .importance import PseudoMarginalTarget, importance_log_marginal, importance_log_weights

__all__ = ["importance_log_marginal", "importance_log_weights", "PseudoMarginalTarget"]
