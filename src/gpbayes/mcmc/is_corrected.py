"""NUTS on an approximate (Laplace or EP) posterior, made exact by an importance-sampling correction.

Pseudo-marginal MH (Filippone & Girolami 2014, Alg. 1) is exact but moves psi = log theta by a
random walk, whose efficiency falls roughly as 1/p with the number p of hyperparameters (ARD
kernels: p = d + 1 or d + 2).  This module uses the gradient instead and restores exactness
afterwards, as Vihola, Helske & Franks (2020, "Importance sampling type estimators based on
approximate marginal Markov chain Monte Carlo", Scand. J. Stat.) propose:

1. **Approximate chain.**  NUTS (``gpbayes.mcmc.nuts``, Stan's warm-up) targets

       pi_a(psi)  propto  p(psi) q(y | psi),

   q an approximate marginal with its analytic gradient: Laplace's (R&W eq. 3.32 and Alg. 5.1,
   :func:`gpbayes.approx.laplace_log_marginal_and_grad`) or EP's (log Z_EP, R&W eq. 5.27,
   :func:`gpbayes.approx.ep_log_marginal_and_grad`).  Each evaluation warm-starts from the fit of
   the previous one (:class:`ApproximateLogPosterior`).
2. **Correction.**  After every kept draw psi_i, one unbiased estimate p~(y | psi_i) of the exact
   marginal -- F&G eq. 25 with ``n_imp`` draws from a Gaussian approximation at psi_i, Laplace or
   EP (``gpbayes.estimators.PseudoMarginalTarget``; the estimate is unbiased whichever Gaussian is
   used, and EP's, where the likelihood offers it, is the better importance density: on
   Ionosphere, n = 351 with 34 ARD hyperparameters, the sd of log p~ with 64 draws was 2.3 with
   Laplace's and 0.46 with EP's) -- gives the weight

       w_i = p~(y | psi_i) p(psi_i) / (p(psi_i) q(y | psi_i)) = exp(log_weight_i),

   the denominator being exactly the log density the chain targets (its state's
   ``log_density``), so the tolerance of Newton's method cannot bias the weights.
3. **Estimates.**  sum_i w_i h(psi_i) / sum_i w_i is consistent for E[h(psi) | y] under the exact
   posterior (Vihola et al. 2020, Sec. 3, Theorem 3: the IS-type estimator of an approximate
   marginal chain, with non-negative unbiased weights, is strongly consistent; their Sec. 5 gives
   its CLT).  ``gpbayes.diagnostics.importance_corrected_summary`` computes it with a Monte Carlo
   error of the delta method over the chains' autocorrelation, so the reported effective sample
   size is the corrected estimator's, not the chain's alone.

The weights are computed once per kept draw (not per leapfrog step): one Cholesky of K and a
warm-started Laplace fit (a few Cholesky factorisations of B) next to a NUTS transition of many
gradient evaluations.  The weights travel in ``sample_stats["log_weight"]``; the ``posterior``
group holds the approximate chain's draws unweighted.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .. import linalg
from ..approx import failures_counted
from ..approx.ep import ep_log_marginal_and_grad
from ..approx.laplace import laplace_log_marginal_and_grad
from . import nuts, runner

__all__ = ["ApproximateLogPosterior", "ISCorrectionInfo", "WeightedAdaptation", "chain_spec"]

_FAILURES = (np.linalg.LinAlgError, FloatingPointError, linalg.NotPositiveDefiniteError, ValueError)


class ApproximateLogPosterior:
    """psi -> (log q(y | psi) + log p(psi), gradient) for HMC/NUTS, q the ``approximation``'s marginal.

    ``"laplace"``: R&W eq. 3.32 with the gradient of R&W Alg. 5.1
    (:func:`gpbayes.approx.laplace_log_marginal_and_grad`); ``"ep"``: log Z_EP with R&W eq. 5.27
    (:func:`gpbayes.approx.ep_log_marginal_and_grad`; the likelihoods that offer EP, the probit).
    The fit of the last successful evaluation (Laplace's mode, EP's sites) warm-starts the next
    one (the chain's leapfrog points are close), which changes the path to the fixed point, not
    the fixed point.  One object per chain: its warm start is that chain's history, so a chain's
    draws depend only on its generator.  Outside the prior's support, where the approximation fails
    numerically or stops short of its tolerance, the value is -inf and the gradient NaN (NUTS then
    counts a divergence; ``n_failures`` counts them, and ``sample_stats`` the non-converged fits).
    """

    def __init__(self, kernel, X, y, likelihood, prior, *, approximation: str = "laplace", tol: float | None = None):
        if approximation not in ("laplace", "ep"):
            raise ValueError(f"approximation must be 'laplace' or 'ep', got {approximation!r}")
        self.kernel, self.prior, self.likelihood, self.approximation = kernel, prior, likelihood, approximation
        # Laplace: Newton converges quadratically, so a tight tolerance costs at most one more step.
        # EP converges linearly: its default 1e-4 on log Z_EP (the "logz" rule).  Measured on Ionosphere
        # ARD (n = 351, 34 hyperparameters, 2 x (300 + 300)): 1e-6 took 15 ms per gradient (7 EP updates
        # from the previous point's sites), 1e-4 10 ms (3); the same 13.5-13.9 leapfrog steps per draw,
        # min weighted bulk ESS per CPU-s 0.16 and 0.48.  The warm-started fit makes the chain's log
        # density a function of psi only to that tolerance; the weights divide by the value the chain
        # used, and tests/test_is_corrected.py checks the EP chain's weighted estimates against the
        # exact posterior at this default.
        self.tol = tol if tol is not None else (1e-9 if approximation == "laplace" else 1e-4)
        self.X = np.asarray(X, dtype=np.float64)
        self.y = likelihood.check_targets(y)
        self.last = None  # the approximation of the last successful evaluation
        self.n_failures = 0

    @property
    def warm(self):
        """The warm start of the next evaluation: Laplace's last mode (None before the first)."""
        return None if self.last is None or self.approximation != "laplace" else self.last.m

    def _fit(self, psi):
        if self.approximation == "laplace":
            return laplace_log_marginal_and_grad(self.kernel, psi, self.X, self.y, self.likelihood, f_init=self.warm,
                                                 tol=self.tol, targets_checked=True)
        sites = None if self.last is None else (self.last.nu, self.last.w)
        return ep_log_marginal_and_grad(self.kernel, psi, self.X, self.y, self.likelihood, sites, tol=self.tol,
                                        targets_checked=True)

    def __call__(self, psi) -> tuple[float, np.ndarray]:
        """(log q(y | psi) + log p(psi), its gradient in psi)."""
        psi = np.asarray(psi, dtype=np.float64)
        nan = np.full(psi.size, np.nan)
        with np.errstate(over="ignore", invalid="ignore"):
            lp = float(self.prior.log_density(psi))
            if not math.isfinite(lp):
                return -math.inf, nan
            try:
                with failures_counted():  # counted (sample_stats n_not_converged), not printed
                    value, grad, q = self._fit(psi)
            except _FAILURES:
                self.n_failures += 1
                return -math.inf, nan
            if not (q.converged and math.isfinite(value) and np.all(np.isfinite(grad))):
                # the fit did not reach its tolerance (e.g. amplitudes of 1e20 in an early step-size
                # search): the gradient formulas hold at the fixed point only, so the point is refused
                self.n_failures += 1
                return -math.inf, nan
        self.last = q
        return value + lp, grad + self.prior.grad_log_density(psi)


class ISCorrectionInfo(NamedTuple):
    """A NUTS transition's statistics (``nuts.NUTSInfo``) plus the importance correction of the kept draw.

    ``log_weight`` = log p~(y | psi) + log p(psi) - (the chain's log density at psi), where p~ is
    F&G eq. 25 with the estimator's ``n_imp`` draws; ``n_cubic`` includes the estimate's O(n^3)
    operations (one Cholesky of K plus the Laplace or EP fit).
    """

    accepted: bool
    acceptance_prob: float
    n_cubic: int
    n_grad_evals: int
    n_leapfrog: int
    tree_depth: int
    diverging: bool
    energy: float
    log_weight: float


def log_weight(rng: np.random.Generator, estimator, state, warm) -> tuple[float, int]:
    """The IS correction of Vihola et al. (2020) at the chain's state: (log weight, O(n^3) operations).

    ``estimator`` is a ``PseudoMarginalTarget`` (``warm_start=True``: its fit starts from ``warm``, a
    ``GaussianApproximation`` of the same kind, or None).
    """
    est = estimator.estimate(state.position, rng, warm=warm)
    lw = est.value - state.log_density
    return (float(lw) if not math.isnan(lw) else -math.inf), int(est.n_cubic)


class WeightedAdaptation:
    """An adaptation (``gpbayes.mcmc.adaptation`` protocol) whose frozen kernel also weighs each draw.

    Warm-up runs the wrapped adaptation unchanged (no weights: warm-up draws are discarded); the
    kernel returned by :meth:`finalize` makes the NUTS transition and then draws the importance
    estimate at the new position from the same generator (:func:`log_weight`).
    """

    def __init__(self, adapt, estimator, log_posterior: ApproximateLogPosterior):
        self.adapt, self.estimator, self.log_posterior = adapt, estimator, log_posterior

    def init(self, rng, state):
        """The wrapped adaptation's ``init``."""
        return self.adapt.init(rng, state)

    def kernel(self, astate):
        """The wrapped adaptation's warm-up kernel."""
        return self.adapt.kernel(astate)

    def update(self, astate, iteration, state, info):
        """The wrapped adaptation's ``update``."""
        return self.adapt.update(astate, iteration, state, info)

    def finalize(self, astate):
        """The tuned NUTS kernel followed by the importance correction of its draw."""
        step, params = self.adapt.finalize(astate)
        return weighted_kernel(step, self.estimator, self.log_posterior), params


def weighted_kernel(step, estimator, log_posterior: ApproximateLogPosterior):
    """``step`` (a NUTS kernel) followed by :func:`log_weight` at the new state.

    The importance density's fit starts from the estimator's previous one (``last_approximation``:
    the previous kept draw's Laplace mode or EP sites), else from the chain's last fit of the same kind.
    """

    def kernel(rng, state):
        state, info = step(rng, state)
        warm = estimator.last_approximation
        if warm is None and estimator.approx == log_posterior.approximation:
            warm = log_posterior.last
        lw, cubic = log_weight(rng, estimator, state, warm)
        return state, ISCorrectionInfo(*info, log_weight=lw)._replace(n_cubic=int(info.n_cubic) + cubic)

    return kernel


def chain_spec(position0, log_posterior: ApproximateLogPosterior, estimator, *, n_adapt: int = 1000,
               step_size: float | None = None, **nuts_options) -> runner.ChainSpec:
    """An IS-corrected NUTS chain: ``nuts.chain_spec`` on ``log_posterior`` (Stan's warm-up, its
    options ``nuts_options``), the kept draws weighted by ``estimator`` (module docstring).

    With ``n_adapt = 0`` the given ``step_size`` is used as it is (identity mass matrix).
    """
    spec = nuts.chain_spec(position0, log_posterior, n_adapt=n_adapt, step_size=step_size, **nuts_options)
    if spec.adapt is None:
        return runner.ChainSpec(spec.init, weighted_kernel(spec.step, estimator, log_posterior), 0)
    return runner.ChainSpec(spec.init, None, spec.n_warmup, WeightedAdaptation(spec.adapt, estimator, log_posterior))
