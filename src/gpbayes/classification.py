"""GP probit classification: predictive probabilities and EP type-II ML.

Model (Filippone & Girolami 2014, eqs. 1-3): p(y_i | f_i) = Phi(y_i f_i),
y_i in {-1, +1}, f ~ N(0, K_psi).

Predictive probability for one theta (F&G eqs. 7-8).  With a Gaussian
approximation q(f | y, theta) = N(m, Sigma), Sigma = (K^-1 + diag(w))^-1
(``gpbayes.approx``), the latent predictive is N(f_* | m_*, s2_*) with

    m_*  = k_*^T K^-1 m,
    s2_* = k_** - k_*^T K^-1 k_* + k_*^T K^-1 Sigma K^-1 k_*
         = k_** - k_*^T (K + W^-1)^-1 k_*
         = k_** - |L_B^-1 W^1/2 k_*|^2,      B = I + W^1/2 K W^1/2 = L_B L_B^T,

and p(y_* = +1 | y, theta) = Phi(m_* / sqrt(1 + s2_*)) (F&G eq. 8).  This is
R&W Alg. 3.6 for EP (W = S~ the site precisions, K^-1 mu = nu~ - z) and
R&W Alg. 3.2 for the Laplace approximation (W at the mode, and
K^-1 f_hat = grad log p(y | f_hat) at the mode), both with the probit
averaged predictive R&W eq. 3.80 / F&G eq. 8.  Only the Cholesky factor of
B that the approximation already holds is used: prediction makes no
O(n^3) operation beyond the approximation itself (F&G Sec. 5.4) -- a
triangular solve with the m test columns is O(n^2 m).  K^-1 is never formed.
The latent predictive is ``GaussianApproximation.latent_predictive`` (the one
implementation, shared with ``gpbayes.predict``).

Other likelihoods.  Every function takes ``likelihood`` (default the probit,
``gpbayes.likelihoods.Probit``): the labels are checked, the approximations
run and the averaged predictive is taken by that likelihood's protocol
(``check_targets``, ``tilted_moments`` for EP, ``d1``/``d2`` for Laplace,
``predictive_mean`` for eq. 8's last step: Phi(m_* / sqrt(1 + s2_*)) for the
probit, quadrature otherwise).

Averaging over hyperparameters.  ``mcmc_predictive`` gives

* MCMC EP / MCMC LA (F&G Sec. 5.2: "predictions ... were carried out by
  approximately integrating out latent variables according to the Gaussian
  approximation given by the EP algorithm"; Sec. 5.4: "the mean of the
  predictive distribution is an average of means computed for several
  draws from the posterior over theta"):
  p(y_* | y) ~= 1/N sum_i Phi(m_*(theta_i) / sqrt(1 + s2_*(theta_i)));
* MCMC PM EP, when latent draws ``f_samples`` are given (F&G eq. 20):
  p(y_* | y) ~= 1/N sum_i int Phi(f_*) p(f_* | f_i, theta_i) df_*
             = 1/N sum_i Phi(mu_* / sqrt(1 + beta2_*)),
  mu_* = k_*^T K^-1 f_i, beta2_* = k_** - k_*^T K^-1 k_*, which needs the
  Cholesky factor of K(theta_i) (one counted O(n^3) operation per distinct
  theta).

EP type-II ML (F&G Sec. 5.2 "EP ML").  ``fit_ep_type2_ml`` maximises
log Z_EP(psi) by L-BFGS-B over the log-parameters psi, with restarts drawn
from an explicit generator as ``gpbayes.regression.fit_type2_ml`` does.
The gradient is analytic (R&W eq. 5.27, GPML ``infEP``):

    d log Z_EP / d psi_j = 1/2 tr((b b^T - S~^1/2 B^-1 S~^1/2) dK/dpsi_j),
    b = (I - S~^1/2 B^-1 S~^1/2 K) nu~ = K^-1 mu,

valid at the EP fixed point, where the implicit dependence through the site
parameters drops out (log Z_EP is stationary in them).  It costs one extra
O(n^3) operation, B^-1 from its factor (F&G Sec. 5.4: "Computing such
derivatives involves an extra O(n^3) operation").  Because it holds only at
the fixed point, EP is run to a tight tolerance inside the optimiser
(``ep_tol=1e-12`` in EP's default stopping rule on the change of log Z_EP
and of the sites, ``gpbayes.approx.ep``) and
warm-started from the previous evaluation's sites; ``gradient=
"finite-difference"`` falls back to L-BFGS-B's differences of log Z_EP.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from . import linalg
from .approx import GaussianApproximation, ep_approximation, laplace_approximation
from .kernels import SquaredExponential
from .likelihoods import Probit

__all__ = [
    "gaussian_approximation",
    "latent_predictive",
    "predictive_probabilities",
    "mcmc_predictive",
    "latent_sample_predictive",
    "ep_log_marginal_and_grad",
    "EPType2MLResult",
    "fit_ep_type2_ml",
    "default_init",
]

_PROBIT = Probit()
_APPROX = ("ep", "laplace")


# --------------------------------------------------------------------------
# one theta
# --------------------------------------------------------------------------
def _check_data(X, y, X_test=None, likelihood=_PROBIT):
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    y = likelihood.check_targets(y)
    if X.ndim != 2 or X.shape[0] != y.shape[0]:
        raise ValueError(f"X must be (n, d) with n = len(y) = {y.shape[0]}, got {X.shape}")
    if X_test is None:
        return X, y
    X_test = np.asarray(X_test, dtype=np.float64)
    if X_test.ndim == 1:
        X_test = X_test[:, None] if X.shape[1] == 1 else X_test[None, :]
    if X_test.ndim != 2 or X_test.shape[1] != X.shape[1]:
        raise ValueError(f"X_test must be (m, {X.shape[1]}), got {X_test.shape}")
    return X, y, X_test


def gaussian_approximation(
    X, y, kernel: SquaredExponential, psi, approx: str = "ep", *, likelihood=_PROBIT, **options
) -> GaussianApproximation:
    """q(f | y, theta) by EP (``approx="ep"``) or Laplace (``"laplace"``) at psi, for ``likelihood`` (probit).

    ``options`` go to ``ep_approximation`` (``mode``, ``tol``, ``max_iter``,
    ``damping``, ``sites_init``) or ``laplace_approximation`` (``tol``,
    ``max_iter``, ``f_init``, ``alpha_init``).
    """
    if approx not in _APPROX:
        raise ValueError(f"approx must be one of {_APPROX}, got {approx!r}")
    X, y = _check_data(X, y, likelihood=likelihood)
    K = kernel(np.asarray(psi, dtype=np.float64), X)
    if approx == "ep":
        return ep_approximation(K, y, likelihood, **options)
    return laplace_approximation(K, y, likelihood, **options)


def latent_predictive(
    approximation: GaussianApproximation, y, kernel: SquaredExponential, psi, X, X_test, *, likelihood=_PROBIT
) -> tuple[np.ndarray, np.ndarray]:
    """Mean m_* and variance s2_* of q(f_* | y, theta) at the rows of X_test.

    R&W Alg. 3.6 (EP) / Alg. 3.2 (Laplace) by ``GaussianApproximation.latent_predictive``,
    without the final averaging step.  ``y`` is needed only for the Laplace
    mean, taken as R&W Alg. 3.2 line 4 writes it: k_*^T grad log p(y | f_hat);
    EP's is k_*^T K^-1 mu (Alg. 3.6 lines 4-6, ``alpha``).
    """
    X, y, X_test = _check_data(X, y, X_test, likelihood)
    psi = np.asarray(psi, dtype=np.float64)
    a = approximation
    Ks = kernel(psi, X, X_test)  # k(x_*) for every test point, (n, m)
    weights = likelihood.d1(y, a.m) if a.method == "laplace" else None
    return a.latent_predictive(Ks, kernel.diag(psi, X_test), weights)


def predictive_probabilities(
    X,
    y,
    X_test,
    kernel: SquaredExponential,
    psi,
    approx: str = "ep",
    *,
    return_approximation: bool = False,
    likelihood=_PROBIT,
    **options,
):
    """p(y_* = +1 | x_*, y, theta) for each row of X_test (F&G eqs. 7-8).

    Parameters
    ----------
    X, y : training inputs (n, d) and labels in {-1, +1}.
    X_test : test inputs (m, d).
    kernel, psi : covariance function and its log-parameters.
    approx : ``"ep"`` (R&W Alg. 3.5/3.6) or ``"laplace"`` (Alg. 3.1/3.2).
    return_approximation : also return the ``GaussianApproximation`` (for
        warm starts and for log q(y | theta)).
    likelihood : the probit by default; any ``gpbayes.likelihoods.Likelihood``
        (the result is then its ``predictive_mean``).
    options : passed to the approximation (see ``gaussian_approximation``).

    Returns
    -------
    p : (m,) probabilities of the class +1; ``(p, approximation)`` with
    ``return_approximation``.
    """
    X, y, X_test = _check_data(X, y, X_test, likelihood)
    a = gaussian_approximation(X, y, kernel, psi, approx, likelihood=likelihood, **options)
    mean, var = latent_predictive(a, y, kernel, psi, X, X_test, likelihood=likelihood)
    # F&G eq. 8 / R&W eq. 3.80 for the probit: int Phi(f) N(f | m, s2) df = Phi(m / sqrt(1 + s2))
    p = likelihood.predictive_mean(mean, var)
    return (p, a) if return_approximation else p


# --------------------------------------------------------------------------
# averaging over MCMC draws of theta
# --------------------------------------------------------------------------
def _flatten_draws(samples, thin: int, trailing: int, name: str) -> np.ndarray:
    """(N, *t) or (chains, draws, *t) -> thinned (N', *t), thinning per chain."""
    S = np.asarray(samples, dtype=np.float64)
    if S.ndim == trailing + 1:
        S = S[::thin]
    elif S.ndim == trailing + 2:
        S = S[:, ::thin].reshape((-1,) + S.shape[2:])
    else:
        raise ValueError(
            f"{name}: expected shape (draws, ...) or (chains, draws, ...) with "
            f"{trailing} trailing dimension(s), got {S.shape}"
        )
    if S.shape[0] == 0:
        raise ValueError(f"{name}: no draws left after thinning by {thin}")
    return S


def latent_sample_predictive(X, X_test, kernel: SquaredExponential, psi, F, *, likelihood=_PROBIT) -> np.ndarray:
    """Phi(mu_* / sqrt(1 + beta2_*)) for latent draws F (k, n) at one theta (F&G eq. 20).

    mu_* = k_*^T K^-1 f, beta2_* = k_** - k_*^T K^-1 k_* (F&G Sec. 2.1);
    returns (k, m).  One Cholesky of K (with ``linalg``'s jitter if needed).
    With another ``likelihood``: its ``predictive_mean(mu_*, beta2_*)``.
    """
    X = np.asarray(X, dtype=np.float64)
    X = X[:, None] if X.ndim == 1 else X
    X_test = np.asarray(X_test, dtype=np.float64)
    X_test = X_test.reshape(-1, X.shape[1])
    psi = np.asarray(psi, dtype=np.float64)
    F = np.atleast_2d(np.asarray(F, dtype=np.float64))
    L = linalg.cholesky(kernel(psi, X), name="K")
    Ks = kernel(psi, X, X_test)
    V = linalg.solve_triangular(L, Ks, lower=True)  # L^-1 k_*
    U = linalg.solve_triangular(L, F.T, lower=True)  # L^-1 f, (n, k)
    mu = U.T @ V  # f^T K^-1 k_*, (k, m)
    beta2 = np.maximum(kernel.diag(psi, X_test) - np.einsum("ij,ij->j", V, V), 0.0)
    return likelihood.predictive_mean(mu, beta2[None, :])


def mcmc_predictive(
    X,
    y,
    X_test,
    kernel: SquaredExponential,
    psi_samples,
    approx: str = "ep",
    *,
    thin: int = 1,
    f_samples=None,
    warm_start: bool = True,
    return_per_draw: bool = False,
    likelihood=_PROBIT,
    **options,
):
    """Monte Carlo average of the predictive over MCMC draws (F&G eqs. 8, 20).

    Parameters
    ----------
    psi_samples : draws of psi, shape (N, p) or (chains, draws, p).
    thin : keep every ``thin``-th draw (along ``draws``, per chain).
    f_samples : optional latent draws f^(i) paired with psi_samples, shape
        (N, n) or (chains, draws, n).  Given: F&G eq. 20, the average of
        Phi(mu_* / sqrt(1 + beta2_*)) over the conditional p(f_* | f^(i),
        theta^(i)) -- MCMC PM EP.  Not given: the average of the Gaussian-
        approximation predictive (eq. 8) over theta^(i) -- MCMC EP / MCMC LA.
    approx : approximation for the eq. 8 branch, ``"ep"`` or ``"laplace"``.
    warm_start : start each EP/Laplace run from the previous draw's sites
        (``nu~, tau~``) / mode.  This only changes where the fixed-point
        iteration starts, so results differ from cold starts at the level of
        the approximation's tolerance (pass ``tol`` to tighten).  Consecutive
        repeated draws (rejected MH proposals) reuse the previous result.
    return_per_draw : also return the (N', m) per-draw probabilities.
    likelihood : the probit by default; any ``gpbayes.likelihoods.Likelihood``.
    options : passed to the approximation.

    Returns
    -------
    p : (m,) averaged p(y_* = +1 | y); ``(p, P)`` with ``return_per_draw``.
    """
    if thin < 1 or int(thin) != thin:
        raise ValueError(f"thin must be a positive integer, got {thin}")
    thin = int(thin)
    X, y, X_test = _check_data(X, y, X_test, likelihood)
    n, m = X.shape[0], X_test.shape[0]
    Psi = _flatten_draws(psi_samples, thin, 1, "psi_samples")
    if Psi.shape[1] != kernel.n_params:
        raise ValueError(f"psi_samples: expected {kernel.n_params} parameters, got {Psi.shape[1]}")
    P = np.empty((Psi.shape[0], m))

    if f_samples is not None:
        F = _flatten_draws(f_samples, thin, 1, "f_samples")
        if F.shape != (Psi.shape[0], n):
            raise ValueError(
                f"f_samples must pair with psi_samples: expected {(Psi.shape[0], n)} after "
                f"flattening and thinning, got {F.shape}"
            )
        # group consecutive draws with the same theta: one Cholesky of K each
        start = 0
        for i in range(1, Psi.shape[0] + 1):
            if i == Psi.shape[0] or not np.array_equal(Psi[i], Psi[start]):
                P[start:i] = latent_sample_predictive(X, X_test, kernel, Psi[start], F[start:i],
                                                      likelihood=likelihood)
                start = i
    else:
        prev = None
        prev_psi = None
        for i, psi in enumerate(Psi):
            if prev_psi is not None and np.array_equal(psi, prev_psi):
                P[i] = P[i - 1]
                continue
            opts = dict(options)
            if warm_start and prev is not None:
                if approx == "ep":
                    opts.setdefault("sites_init", (prev.nu, prev.w))
                else:
                    opts.setdefault("f_init", prev.m)
            P[i], prev = predictive_probabilities(
                X, y, X_test, kernel, psi, approx, return_approximation=True, likelihood=likelihood, **opts
            )
            prev_psi = psi
    p = P.mean(axis=0)
    return (p, P) if return_per_draw else p


# --------------------------------------------------------------------------
# EP type-II maximum likelihood
# --------------------------------------------------------------------------
def ep_log_marginal_and_grad(
    X, y, kernel: SquaredExponential, psi, *, likelihood=_PROBIT, **ep_options
) -> tuple[float, np.ndarray, GaussianApproximation]:
    """log Z_EP(psi), its gradient in psi (R&W eq. 5.27), and the EP result.

    Exact only at the EP fixed point: pass a tight ``tol`` (e.g. 1e-10) when
    the gradient must be accurate.  Costs the EP run plus one O(n^3)
    operation (B^-1 from its Cholesky factor).
    """
    X, y = _check_data(X, y, likelihood=likelihood)
    psi = np.asarray(psi, dtype=np.float64)
    K = kernel(psi, X)
    ep = ep_approximation(K, y, likelihood, **ep_options)
    sw = ep.sqrt_w
    # R&W Alg. 5.2 / eq. 5.27: b = K^-1 mu (= nu~ - S~^1/2 B^-1 S~^1/2 K nu~),
    # R = b b^T - S~^1/2 B^-1 S~^1/2
    Binv = linalg.cho_inverse(ep.B_chol)
    R = np.outer(ep.alpha, ep.alpha) - sw[:, None] * Binv * sw[None, :]
    grads = kernel.gradients(psi, X, K)
    # 1/2 tr(R dK/dpsi_j) for symmetric R, dK: elementwise product summed
    g = np.array([0.5 * np.einsum("ij,ij->", R, dK) for dK in grads])
    return ep.log_marginal, g, ep


def default_init(X, kernel: SquaredExponential) -> np.ndarray:
    """psi with unit amplitude and every length-scale at the median pairwise distance (``kernel.initial_psi``)."""
    return kernel.initial_psi(X, amplitude=1.0)


@dataclasses.dataclass(frozen=True)
class EPType2MLResult:
    """Outcome of ``fit_ep_type2_ml``.

    psi : the best log-parameters found.
    log_marginal : log Z_EP at psi (a fresh, cold-started EP run).
    initial_log_marginal : log Z_EP at the first starting point (cold EP).
    objective : log Z_EP (+ log prior) at psi as seen by the optimiser.
    all_objectives : the final objective of every restart.
    n_restarts, n_evaluations : restarts and EP runs made.
    n_not_converged : EP runs inside the optimiser that hit ``ep_max_iter``.
    n_cubic : O(n^3) operations counted over the whole fit.
    converged : L-BFGS-B reported success for the best restart.
    approximation : the EP result at psi (for EP-ML predictions).
    """

    psi: np.ndarray
    log_marginal: float
    initial_log_marginal: float
    objective: float
    all_objectives: np.ndarray
    n_restarts: int
    n_evaluations: int
    n_not_converged: int
    n_cubic: int
    converged: bool
    approximation: GaussianApproximation


def fit_ep_type2_ml(
    X,
    y,
    kernel: SquaredExponential,
    rng: np.random.Generator,
    n_restarts: int = 5,
    *,
    init=None,
    init_spread: float = 1.0,
    log_prior=None,
    bounds: tuple[float, float] = (-8.0, 8.0),
    gradient: str = "analytic",
    maxiter: int = 200,
    ep_tol: float = 1e-12,
    ep_max_iter: int = 1000,
    ep_mode: str = "parallel",
    likelihood=_PROBIT,
) -> EPType2MLResult:
    """EP-ML: maximise log Z_EP(psi) (+ ``log_prior``) by L-BFGS-B with restarts.

    Restart r = 0 starts from ``init`` (default ``default_init``: unit
    amplitude, length-scales at the median pairwise distance); restarts
    r >= 1 from ``init + init_spread * N(0, I)`` drawn from ``rng``.  Every
    coordinate of psi is kept in ``bounds`` (separable data drive the
    amplitude to infinity, where log Z_EP -> 0 from below).

    ``gradient="analytic"`` uses R&W eq. 5.27 (see the module docstring);
    ``"finite-difference"`` lets L-BFGS-B difference log Z_EP (2-point,
    step 1e-6).  Both need EP run close to its fixed point: the analytic
    gradient holds only there, and differences of log Z_EP amplify its
    error.  Hence ``ep_tol = 1e-12`` in EP's default rule (change of log Z_EP
    and of the site parameters; with F&G's rule ||Delta mu||^2 < tol n at
    1e-8 the finite-difference fit stopped where the gradient was
    still 0.3 in a 30-point test; the analytic fit did not mind).  Inside
    one restart each EP run is warm-started from the previous run's sites,
    which at this tolerance moves log Z_EP by far less than the optimiser's
    tolerance.  A non-positive-definite B or a non-finite log Z_EP counts
    as -inf; EP runs that stop at ``ep_max_iter`` are used as they are and
    counted in ``n_not_converged``.  ``likelihood`` (the probit by default)
    gives EP its tilted moments (``gpbayes.likelihoods``).
    """
    from scipy import optimize  # imported where used: keeps the start-up of jobs that do not fit short

    if gradient not in ("analytic", "finite-difference"):
        raise ValueError(f"gradient must be 'analytic' or 'finite-difference', got {gradient!r}")
    if n_restarts < 1:
        raise ValueError(f"n_restarts must be >= 1, got {n_restarts}")
    X, y = _check_data(X, y, likelihood=likelihood)
    init = default_init(X, kernel) if init is None else np.asarray(init, dtype=np.float64)
    if init.shape != (kernel.n_params,):
        raise ValueError(f"init must have shape ({kernel.n_params},), got {init.shape}")
    lo, hi = bounds
    ep_options = dict(tol=ep_tol, max_iter=ep_max_iter, mode=ep_mode, likelihood=likelihood)
    state = {"sites": None, "evals": 0, "not_converged": 0}

    def run(psi, with_grad):
        opts = dict(ep_options)
        if state["sites"] is not None:
            opts["sites_init"] = state["sites"]
        state["evals"] += 1
        if with_grad:
            v, g, ep = ep_log_marginal_and_grad(X, y, kernel, psi, **opts)
        else:
            ep = gaussian_approximation(X, y, kernel, psi, "ep", **opts)
            v, g = ep.log_marginal, None
        if not np.isfinite(v):
            raise np.linalg.LinAlgError("log Z_EP is not finite")
        state["not_converged"] += not ep.converged
        state["sites"] = (ep.nu, ep.w)
        if log_prior is not None:
            v += log_prior.log_density(psi)
            if g is not None:
                g = g + log_prior.grad_log_density(psi)
        return v, g

    def objective_with_grad(psi):
        try:
            v, g = run(psi, True)
        except np.linalg.LinAlgError:
            state["sites"] = None
            return np.inf, np.zeros_like(psi)
        return -v, -g

    def objective(psi):
        try:
            v, _ = run(psi, False)
        except np.linalg.LinAlgError:
            state["sites"] = None
            return np.inf
        return -v

    with linalg.count_ops() as ops:
        initial = gaussian_approximation(X, y, kernel, init, "ep", **ep_options).log_marginal
        results = []
        for r in range(n_restarts):
            x0 = init if r == 0 else init + init_spread * rng.standard_normal(init.size)
            x0 = np.clip(x0, lo, hi)
            state["sites"] = None
            if gradient == "analytic":
                res = optimize.minimize(objective_with_grad, x0, jac=True, method="L-BFGS-B",
                                        bounds=[(lo, hi)] * init.size, options={"maxiter": maxiter})
            else:
                res = optimize.minimize(objective, x0, jac="2-point", method="L-BFGS-B",
                                        bounds=[(lo, hi)] * init.size,
                                        options={"maxiter": maxiter, "eps": 1e-6})
            results.append(res)
        objs = np.array([res.fun for res in results])
        best = results[int(np.argmin(objs))]
        if not np.isfinite(best.fun):
            raise RuntimeError("EP type-II ML failed: EP failed at every restart")
        psi_hat = np.asarray(best.x, dtype=np.float64)
        final = gaussian_approximation(X, y, kernel, psi_hat, "ep", **ep_options)
    return EPType2MLResult(
        psi=psi_hat,
        log_marginal=float(final.log_marginal),
        initial_log_marginal=float(initial),
        objective=float(-best.fun),
        all_objectives=-objs,
        n_restarts=n_restarts,
        n_evaluations=state["evals"],
        n_not_converged=state["not_converged"],
        n_cubic=ops.cubic,
        converged=bool(best.success),
        approximation=final,
    )
