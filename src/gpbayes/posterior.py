"""Log posterior of hyperparameters for a model with an exact marginal likelihood, as samplers take it.

For GP regression (``gpbayes.regression.GPRegression``; Rasmussen & Williams
2006, Alg. 2.1 and eq. 5.9) with a prior on the log-hyperparameters psi
(``gpbayes.priors``, Jacobian included there):

    log p(psi | y) = log p(y | psi) + log p(psi) + const.

``log_posterior`` gives the value (one Cholesky: what random-walk MH, slice
sampling and AMIS evaluate; Xiong et al. Sec. 4.4 count it as one O(n^3)
operation); ``log_posterior_value_and_grad`` the value and its gradient (one
Cholesky and one inverse from it: what HMC and NUTS evaluate).  Both return
-inf (and a NaN gradient) where the density is zero for numerical purposes:
outside the prior's support, where the covariance cannot be factorised, and
where an extreme psi overflows the kernel (floating-point warnings are
silenced there).  A psi of the wrong shape is an error, not -inf.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

__all__ = ["log_posterior", "log_posterior_value_and_grad"]

# what an extreme psi raises inside the marginal: a failed factorisation
# (gpbayes.linalg.NotPositiveDefiniteError is a LinAlgError), or inf/NaN entries
# of an overflowed kernel reaching LAPACK (ValueError) or numpy (FloatingPointError)
_NUMERICAL_FAILURES = (np.linalg.LinAlgError, ValueError, FloatingPointError)


def _checked(model, psi) -> np.ndarray:
    psi = np.asarray(psi, dtype=np.float64)
    if psi.shape != (model.n_params,):
        raise ValueError(f"expected {model.n_params} log-hyperparameters, got shape {psi.shape}")
    return psi


def log_posterior(model, prior=None) -> Callable[..., float]:
    """psi -> log p(y | psi) + log p(psi) (R&W Alg. 2.1 line 7 plus the prior); ``fn(psi, rng=None)``.

    ``model`` has ``n_params`` and ``log_marginal(psi)`` (e.g.
    ``GPRegression``); ``prior`` has ``log_density(psi)`` or is None (flat).
    The optional ``rng`` argument is ignored, so the function is also a
    (deterministic) ``log_density_fn(position, rng)`` for
    ``gpbayes.mcmc.random_walk``.  -inf where the prior density is zero or
    the marginal fails numerically (module docstring).
    """

    def fn(psi, rng=None):
        psi = _checked(model, psi)
        with np.errstate(over="ignore", invalid="ignore"):
            lp = prior.log_density(psi) if prior is not None else 0.0
            if not np.isfinite(lp):
                return -math.inf
            try:
                return float(model.log_marginal(psi) + lp)
            except _NUMERICAL_FAILURES:
                return -math.inf

    return fn


def log_posterior_value_and_grad(model, prior=None) -> Callable[[np.ndarray], tuple[float, np.ndarray]]:
    """psi -> (log p(y | psi) + log p(psi), its gradient in psi) (R&W eq. 5.9 plus the prior's gradient).

    ``model`` has ``n_params`` and ``log_marginal_and_grad(psi)`` (e.g.
    ``GPRegression``); ``prior`` has ``log_density`` and ``grad_log_density``
    or is None.  Where the density is zero for numerical purposes (module
    docstring) the value is -inf and the gradient NaN, which HMC/NUTS treat
    as a divergence and reject.
    """

    def fn(psi):
        psi = _checked(model, psi)
        nan = np.full(psi.size, np.nan)
        with np.errstate(over="ignore", invalid="ignore"):
            lp, gp = 0.0, 0.0
            if prior is not None:
                lp = float(prior.log_density(psi))
                if not math.isfinite(lp):
                    return -math.inf, nan
                gp = prior.grad_log_density(psi)
            try:
                v, g = model.log_marginal_and_grad(psi)
            except _NUMERICAL_FAILURES:
                return -math.inf, nan
        return v + lp, g + gp

    return fn
