"""Adaptive multiple importance sampling: AMIS, MAMIS, MAMIS-P, AMIS->MAMIS, PM-AMIS.

Xiong, Smidl & Filippone, "Adaptive Multiple Importance Sampling for
Gaussian Processes", Sec. 3 and Alg. 1 (Cornuet et al. 2012), with Gaussian
proposals q_t = N(mu_t, Sigma_t) adapted by weighted moment matching.

Algorithm 1, as implemented by ``run_amis`` (iteration t = 0, ..., T-1):

1. draw N_t samples theta_i^t ~ q_t and evaluate log f(theta_i^t) once each
   (for PM-AMIS, f is the noisy estimate f~ of eq. 11, stored and never
   re-drawn; eq. 23 shows the weights then take the same form);
2. for the new samples, the multiple mixture
   delta_i^t = sum_{l=0}^t N_l q_l(theta_i^t);
3. for all past samples, delta_i^l <- delta_i^l + N_t q_t(theta_i^l);
   every weight is then w_i^l = f(theta_i^l) / [delta_i^l / sum_{j<=t} N_j]
   (eq. 10, the "deterministic multiple mixture");
4. estimate gamma_{t+1} = (mu_{t+1}, Sigma_{t+1}) by weighted moment matching
   (the self-normalised estimators after Alg. 1): full covariance, or only
   its diagonal (AMIS-D / MAMIS-D of Table 4).

Bookkeeping cost.  Everything is in log space.  log delta_i is stored per
sample and never recomputed: step 3 adds the *one* new component to every
past sample (O(total) memory, O(total d^2) work per iteration), step 2
evaluates the t + 1 stored components at the N_t *new* samples only
(O(N_t t d^2), packed symmetric quadratic forms in two matrix products).
Over a run that is O(T * total * d^2) flops, the minimum for Alg. 1, since
every sample must eventually meet every component.  Step 3, the eq.-10
weights of all samples, the running estimates and the sums for moment
matching are fused into one pass over cache-sized column chunks of the
samples, stored as a preallocated (d, total) array; the weighted moments
are accumulated about the current proposal mean mu_t (Sigma_{t+1} =
E_w[(x - mu_t)(x - mu_t)^T] - (mu_{t+1} - mu_t)(...)^T) with a running
maximum of the log weights.  At the paper's T x N_t (1120 x 25, 280 x 100)
this costs about 0.4-0.6 s of CPU per run here, against ~7-10 s of target
evaluations for the paper's smallest data set (Parkinsons, n = 168); see
``AMISResult.bookkeeping_time``.

Variants
--------
``adapt="amis"``   step 4 uses all samples so far with their eq.-10 weights.
``adapt="mamis"``  (Marin et al. 2014) step 4 uses only iteration t's
                   samples, with classical weights f / q_t; the output still
                   uses the eq.-10 weights of all samples.  N_t should grow
                   with t (``mamis_sample_sizes``; Table 3: 26 t, 3000 + 1000 t).
``adapt="mamis_p"`` (MAMIS-P, Sec. 4.5.2, last paragraph) step 4 as MAMIS, but
                   the moment match is regularised by an informative prior on
                   gamma = (mu, Sigma) centred on a Gaussian approximation of
                   the posterior (see ``regularised_moments``).
``amis_then_mamis``  Sec. 4.5.2 / Table 5: AMIS until a number of tuning
                   samples, then MAMIS started from AMIS's last proposal;
                   the AMIS samples are tuning cost only ("We treated samples
                   from AMIS as tuning cost for MAMIS to get an accurate
                   initial importance density").
``pm_amis``        Sec. 3.1: the same algorithm on a noisy, unbiased estimate
                   of the target (e.g. ``estimators.importance.PseudoMarginalTarget``).

The target is ``log_target(theta, rng) -> float`` (the ``rng`` may be
ignored by an exact target; see ``exact``), or with ``vectorized=True``
``log_target(thetas (N, d), rng) -> (N,)``.

Output (``AMISResult``): all samples, their log targets, log mixture
densities and final log weights, the proposals used, and after each
iteration the self-normalised estimates of E[theta] and E[||theta||] over
all samples so far, their ESS, the cumulative O(n^3) operations (counted by
``gpbayes.linalg`` inside the target) and wall time, plus the split of wall
time between target evaluations and bookkeeping.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from . import linalg

__all__ = [
    "AMISResult",
    "run_amis",
    "amis",
    "mamis",
    "mamis_sample_sizes",
    "mamis_p",
    "regularised_moments",
    "amis_then_mamis",
    "pm_amis",
    "exact",
    "gaussian_log_density",
    "weighted_moments",
    "self_normalised",
]

_LOG_2PI = math.log(2.0 * math.pi)
#: bound on the temporary (components x samples x d) array of step 2
_CHUNK_FLOATS = 4_000_000
#: column chunk (in floats) of the fused re-weighting pass: fits in L2 cache
_PASS_FLOATS = 1 << 16


def exact(log_density: Callable[[np.ndarray], float]):
    """Wrap an exact ``log_density(theta)`` as ``(theta, rng) -> float``."""
    return lambda theta, rng: log_density(theta)


# ---------------------------------------------------------------------------
# Gaussian components (hyperparameter-sized d x d matrices: not O(n^3) ops)
# ---------------------------------------------------------------------------
class _Component(NamedTuple):
    mean: np.ndarray
    chol: np.ndarray  # L, Sigma = L L^T
    chol_inv: np.ndarray  # L^-1
    log_det: float  # log |Sigma|


def _component(mean: np.ndarray, cov: np.ndarray, name: str) -> _Component:
    """N(mean, L L^T) with L = chol(cov) (jitter if needed; d x d, not counted)."""
    L = np.ascontiguousarray(linalg.cholesky(cov, name=name, count=False))
    # d x d inverse of the factor (d = number of hyperparameters), with numpy
    # directly: gpbayes.linalg.solve_triangular would count a square
    # right-hand side as an O(n^3) operation
    Linv = np.tril(np.linalg.inv(L))
    return _Component(np.asarray(mean, dtype=np.float64), L, Linv, 2.0 * float(np.sum(np.log(np.diag(L)))))


def gaussian_log_density(X: np.ndarray, mean: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """log N(x_i; mean, cov) for the rows of X (d x d Cholesky, not counted)."""
    c = _component(mean, cov, "Gaussian covariance")
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    return _log_q_columns(np.ascontiguousarray(X.T), c.mean, c.chol_inv, -0.5 * c.log_det
                          - 0.5 * X.shape[1] * _LOG_2PI)


def _log_q_columns(XT: np.ndarray, mean, Linv, log_const) -> np.ndarray:
    """log q(x_j) for the columns x_j of XT (d, m); ``log_const`` = -1/2 log|Sigma| - d/2 log 2 pi (+ log N)."""
    return _log_q_centred(XT - mean[:, None], Linv, log_const)


def _log_q_centred(DT: np.ndarray, Linv, log_const) -> np.ndarray:
    """As ``_log_q_columns`` for columns already centred at the mean."""
    Z = Linv @ DT
    return log_const - 0.5 * np.einsum("ij,ij->j", Z, Z)


def _log_add_into(acc: np.ndarray, x: np.ndarray) -> None:
    """acc <- log(exp(acc) + exp(x)) in place, for finite inputs.

    max + log1p(exp(-|acc - x|)): a few vectorised passes, several times
    faster here than ``np.logaddexp`` (which is not vectorised).
    """
    diff = np.subtract(acc, x)
    np.abs(diff, out=diff)
    np.negative(diff, out=diff)
    np.exp(diff, out=diff)
    np.log1p(diff, out=diff)
    np.maximum(acc, x, out=acc)
    acc += diff


def _logsumexp_rows(A: np.ndarray) -> np.ndarray:
    m = A.max(axis=1)
    return m + np.log(np.exp(A - m[:, None]).sum(axis=1))


def _packed_upper(d: int):
    """Indices of the upper triangle and the weights (1 diagonal, 2 off) that pack x^T P x."""
    iu = np.triu_indices(d)
    return iu, np.where(iu[0] == iu[1], 1.0, 2.0)


def _mixture_at_new(Xt, centre, means, precs, precs_packed, prec_means, log_consts):
    """log sum_l N_l q_l(x) for the rows of Xt over the components l (Alg. 1, step 2).

    Quadratic forms through the precisions P_l, all components in two matrix
    products: (x - mu)^T P (x - mu) = x'^T P x' - 2 x'^T P mu' + mu'^T P mu',
    with x' = x - c, mu' = mu - c and c = ``centre`` (the current proposal
    mean, near which the new samples lie, so x' is O(proposal scale)).
    x'^T P x' uses the packed upper triangle (``precs_packed``: P_ij, doubled
    off the diagonal), half the work of the full d^2.  P mu' = P mu - P c from
    the stored ``prec_means`` = P_l mu_l: the error is O(eps |P| |mu|).
    ``log_consts`` = log N_l - 1/2 log|Sigma_l| - d/2 log 2 pi.
    """
    n, d = Xt.shape
    k = means.shape[0]
    iu, _ = _packed_upper(d)
    out = np.full(n, -np.inf)
    block = max(1, _CHUNK_FLOATS // max(1, n * d))
    Xc = Xt - centre
    XX = Xc[:, iu[0]] * Xc[:, iu[1]]  # (n, d(d+1)/2)
    for a in range(0, k, block):
        b = min(k, a + block)
        flat = precs[a:b].reshape((b - a) * d, d)
        PM = prec_means[a:b] - (flat @ centre).reshape(b - a, d)  # P_l (mu_l - c)
        Mc = means[a:b] - centre
        quad = XX @ precs_packed[a:b].T - 2.0 * (Xc @ PM.T) + np.einsum("li,li->l", Mc, PM)
        part = _logsumexp_rows(log_consts[a:b] - 0.5 * np.maximum(quad, 0.0))
        if a == 0:
            out = part
        else:
            _log_add_into(out, part)
    return out


# ---------------------------------------------------------------------------
# self-normalised estimates and weighted moment matching
# ---------------------------------------------------------------------------
def self_normalised(log_w: np.ndarray) -> tuple[np.ndarray, float]:
    """Normalised weights and their ESS 1 / sum w~^2; all-zero weights give (nan..., 0)."""
    log_w = np.asarray(log_w, dtype=np.float64)
    m = np.max(log_w) if log_w.size else -np.inf
    if not np.isfinite(m):
        return np.full(log_w.shape, np.nan), 0.0
    w = np.exp(log_w - m)
    w /= w.sum()
    return w, float(1.0 / np.dot(w, w))


def _reweight_pass(XT, a, b, q, log_const_t, log_f, log_delta, norms, covariance, chunk):
    """Alg. 1 step 3 for the past samples [0, a), then the eq.-10 weights of all samples [0, b)
    and their weighted sums, in one pass over column chunks that stay in cache.

    With c = q.mean and d_i = theta_i - c, returns (m, W, WW, s1, S2, hn):
    m = max_i log w_i, and with w_i = exp(log w_i - m): W = sum w_i, WW =
    sum w_i^2, s1 = sum w_i d_i, S2 = sum w_i d_i d_i^T (its diagonal for
    ``covariance="diagonal"``, None for ``None``), hn = sum w_i ||h(theta_i)||.
    m is a running maximum: the sums are rescaled whenever it grows.
    """
    d = XT.shape[0]
    c = q.mean[:, None]
    m, W, WW, hn = -np.inf, 0.0, 0.0, 0.0
    s1 = np.zeros(d)
    S2 = None if covariance is None else np.zeros((d, d) if covariance == "full" else d)
    for lo in range(0, b, chunk):
        hi = min(b, lo + chunk)
        D = XT[:, lo:hi] - c
        if lo < a:  # step 3: delta_i <- delta_i + N_t q_t(theta_i)
            k = min(hi, a) - lo
            _log_add_into(log_delta[lo:lo + k], _log_q_centred(D[:, :k], q.chol_inv, log_const_t))
        # eq. 10 (up to the constant log sum_j N_j)
        lw = log_f[lo:hi] - log_delta[lo:hi]
        mc = lw.max()
        if mc == -np.inf:
            continue
        if mc > m:
            if W > 0:
                r = math.exp(m - mc)
                W, WW, hn = W * r, WW * r * r, hn * r
                s1 *= r
                if S2 is not None:
                    S2 *= r
            m = mc
        w = np.exp(lw - m)
        W += float(w.sum())
        WW += float(w @ w)
        hn += float(norms[lo:hi] @ w)
        s1 += D @ w
        if S2 is not None:
            S2 += _weighted_scatter(D, w, covariance)
    return m, W, WW, s1, S2, hn


def _weighted_scatter(DT: np.ndarray, w: np.ndarray, covariance: str) -> np.ndarray:
    """sum_j w_j d_j d_j^T for the columns d_j of DT (d, m), or its diagonal."""
    d = DT.shape[0]
    if covariance == "diagonal":
        return (DT * DT) @ w
    Dw = DT * w
    if d <= 8:  # a few dot products beat a skinny BLAS gemm for small d
        S = np.empty((d, d))
        for i in range(d):
            for j in range(i, d):
                S[i, j] = S[j, i] = Dw[i] @ DT[j]
        return S
    S = Dw @ DT.T
    return 0.5 * (S + S.T)


def weighted_moments(X: np.ndarray, w: np.ndarray, covariance: str = "full"):
    """mu = sum w x / sum w, Sigma = sum w (x - mu)(x - mu)^T / sum w (or its diagonal)."""
    if covariance not in ("full", "diagonal"):
        raise ValueError(f"covariance must be 'full' or 'diagonal', got {covariance!r}")
    XT = np.ascontiguousarray(np.asarray(X, dtype=np.float64).T)
    w = np.asarray(w, dtype=np.float64)
    total = float(w.sum())
    mu = XT @ w / total
    S = _weighted_scatter(XT - mu[:, None], w, covariance) / total
    return mu, (S if covariance == "full" else np.diag(S))


def regularised_moments(X: np.ndarray, w: np.ndarray, prior_mean, prior_cov, prior_strength: float,
                        covariance: str = "full", data_count: str = "ess"):
    """MAMIS-P's step 4: the moment match of MAMIS regularised by an informative prior.

    The paper (Xiong, Smidl & Filippone, Sec. 4.5.2, last paragraph) gives
    MAMIS-P in words only, no equation: "regularize the estimation of the
    parameters of the importance distribution as illustrated in Smidl and
    Hofman (2014) ... an informative prior on gamma of the importance
    distribution q_t(gamma) of MAMIS ... treat the update of these parameters
    in a Bayesian fashion (Kulhavy 1996) ... we use an informative prior based
    on a Gaussian approximation to the posterior over covariance
    parameters."  This function is our reconstruction of that update:

    * prior on gamma = (mu, Sigma): the conjugate normal-inverse-Wishart
      prior centred on the Gaussian approximation N(m0, S0) (in the
      experiments the Laplace approximation N(m, (-H)^-1) of Sec. 4.3.1,
      which is also q_0) and worth ``prior_strength`` = nu0 pseudo-samples
      (kappa0 = nu0 for the mean, Psi0 = nu0 S0 for the scale matrix);
    * data: the iteration's samples with MAMIS's classical weights
      f / q_t (the moment-matching estimators after Alg. 1, eq. 10 context),
      counted as n = their Kish effective sample size (``data_count="ess"``,
      the Kulhavy/Smidl-Hofman weighted-likelihood reading: few dominating
      weights carry little information) or as their number N_t
      (``data_count="n"``);
    * with x_bar, S the self-normalised weighted mean and covariance,
      the posterior statistics are
          mu_hat    = (nu0 m0 + n x_bar) / (nu0 + n),
          Sigma_hat = [nu0 S0 + n S + nu0 n / (nu0 + n) (x_bar - m0)(x_bar - m0)^T] / (nu0 + n),
      i.e. the posterior mean of mu and the inverse of the posterior mean of
      Sigma^-1 (Psi_n / nu_n for Sigma^-1 ~ Wishart(Psi_n^-1, nu_n)).

    Sigma_hat has full rank whenever nu0 > 0 and S0 does, however few
    weights dominate -- the degeneracy MAMIS-P is meant to prevent.  With
    ``prior_strength = 0`` the update is MAMIS's moment match (x_bar, S).
    Equal weights give the moments of the data pooled with nu0 pseudo-samples
    of mean m0 and covariance S0.  ``covariance="diagonal"`` keeps only the
    diagonal (MAMIS-P-D).  Returns (mu_hat, Sigma_hat) like ``weighted_moments``.
    """
    if data_count not in ("ess", "n"):
        raise ValueError(f"data_count must be 'ess' or 'n', got {data_count!r}")
    if not (prior_strength >= 0 and math.isfinite(prior_strength)):
        raise ValueError(f"prior_strength must be a finite number >= 0, got {prior_strength!r}")
    w = np.asarray(w, dtype=np.float64)
    xbar, S = weighted_moments(X, w, covariance)
    m0 = np.asarray(prior_mean, dtype=np.float64).reshape(xbar.shape)
    S0 = np.asarray(prior_cov, dtype=np.float64).reshape(xbar.size, xbar.size)
    n = float(w.sum() ** 2 / (w @ w)) if data_count == "ess" else float(w.size)
    nu0 = float(prior_strength)
    tot = nu0 + n
    mu = (nu0 * m0 + n * xbar) / tot
    dev = xbar - m0
    if covariance == "full":
        Sig = (nu0 * S0 + n * S + (nu0 * n / tot) * np.outer(dev, dev)) / tot
    else:
        Sig = (nu0 * np.diag(S0) + n * np.diag(S) + (nu0 * n / tot) * dev * dev) / tot
        Sig = np.diag(Sig)
    return mu, Sig


# ---------------------------------------------------------------------------
# result
# ---------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class AMISResult:
    """Output of one AMIS/MAMIS/PM-AMIS run (T iterations, N = sum N_t samples, d parameters).

    Per sample (length N): ``samples`` (N, d), ``log_target`` (log f or the
    stored noisy log f~), ``log_mixture`` (log delta_i = log sum_t N_t
    q_t(theta_i)), ``log_weights`` (final eq.-10 log weights
    log f - log(delta / N)), ``iteration`` (t of the proposal that drew it).

    Per iteration (length T): ``sample_sizes``, ``proposal_means`` (T, d) and
    ``proposal_covs`` (T, d, d) of the q_t used, ``estimate_mean`` (T, d) and
    ``estimate_norm`` (T,) -- the self-normalised estimates of E[theta] and
    E[||h(theta)||] over all samples drawn up to and including iteration t,
    with the weights as of iteration t -- ``ess`` (T,), cumulative
    ``n_cubic`` (T,) and ``wall_time`` (T,) at the end of the iteration
    (both include ``tuning_n_cubic``/``tuning_wall_time``, e.g. AMIS tuning
    before MAMIS).  ``next_mean``/``next_cov`` is the proposal fitted after
    the last iteration (gamma_T, not used for sampling).

    Timing: ``target_time`` is the wall time spent inside ``log_target``,
    ``bookkeeping_time`` everything else in the run (sampling, mixture
    updates, weights, moment matching, estimates); the ``*_cpu_time``
    fields are the same split in process CPU time, which is less disturbed
    by other jobs on a shared machine.

    Numerical trouble inside ``log_target`` during the run (``gpbayes.linalg``
    counters): ``n_jitter`` factorisations that needed jitter (largest
    ``max_jitter``), ``n_not_converged`` approximations (e.g. EP in PM-AMIS)
    that stopped at their iteration limit, ``n_failed_estimates`` estimates
    that failed (-inf).  A tuning run before it (AMIS -> MAMIS) keeps its own.
    """

    samples: np.ndarray
    log_target: np.ndarray
    log_mixture: np.ndarray
    log_weights: np.ndarray
    iteration: np.ndarray
    sample_sizes: np.ndarray
    proposal_means: np.ndarray
    proposal_covs: np.ndarray
    estimate_mean: np.ndarray
    estimate_norm: np.ndarray
    ess: np.ndarray
    n_cubic: np.ndarray
    wall_time: np.ndarray
    next_mean: np.ndarray
    next_cov: np.ndarray
    target_time: float
    bookkeeping_time: float
    target_cpu_time: float
    bookkeeping_cpu_time: float
    n_target_evals: int
    n_failed_adaptations: int
    adapt: str
    covariance: str
    tuning_n_cubic: int = 0
    tuning_wall_time: float = 0.0
    n_jitter: int = 0
    max_jitter: float = 0.0
    n_not_converged: int = 0
    n_failed_estimates: int = 0

    @property
    def bookkeeping_fraction(self) -> float:
        """Share of the run's wall time not spent evaluating the target."""
        total = self.target_time + self.bookkeeping_time
        return self.bookkeeping_time / total if total > 0 else float("nan")

    @property
    def normalised_weights(self) -> np.ndarray:
        """The self-normalised importance weights exp(log w) / sum exp(log w) (Xiong et al. Alg. 1;
        the denominator of log w is the deterministic mixture of their eq. 10).
        """
        return self_normalised(self.log_weights)[0]


# ---------------------------------------------------------------------------
# the algorithm
# ---------------------------------------------------------------------------
def run_amis(
    rng: np.random.Generator,
    log_target,
    mean0,
    cov0,
    sample_sizes: Sequence[int],
    *,
    adapt: str = "amis",
    covariance: str = "full",
    vectorized: bool = False,
    norm_transform: Callable[[np.ndarray], np.ndarray] | None = None,
    cost_offset: int = 0,
    time_offset: float = 0.0,
    prior_mean=None,
    prior_cov=None,
    prior_strength: float | None = None,
    data_count: str = "ess",
) -> AMISResult:
    """Alg. 1 with q_0 = N(mean0, cov0) and N_t = ``sample_sizes[t]``.

    ``adapt``: "amis", "mamis" or "mamis_p" (see the module docstring).
    For "mamis_p" the prior of ``regularised_moments`` is N(``prior_mean``,
    ``prior_cov``) (default: q_0 = N(mean0, cov0), the paper's Gaussian
    approximation) worth ``prior_strength`` pseudo-samples (default d + 2,
    see ``mamis_p``), the data counted by ``data_count``.  ``covariance``:
    "full" or "diagonal" moment matching.  ``norm_transform`` maps the
    samples (N, d) to the vectors whose norm is averaged (default: the
    samples themselves; e.g. ``np.exp`` for ||theta|| when sampling log theta).
    If the weights cannot support a new proposal (all zero, or a singular
    covariance even with jitter), the previous proposal is kept (counted in
    ``n_failed_adaptations``).  ``cost_offset``/``time_offset`` are added to
    the cumulative ``n_cubic``/``wall_time`` (tuning spent before the run).
    """
    if adapt not in ("amis", "mamis", "mamis_p"):
        raise ValueError(f"adapt must be 'amis', 'mamis' or 'mamis_p', got {adapt!r}")
    if covariance not in ("full", "diagonal"):
        raise ValueError(f"covariance must be 'full' or 'diagonal', got {covariance!r}")
    sizes = np.asarray(sample_sizes, dtype=np.int64)
    if sizes.ndim != 1 or sizes.size == 0 or np.any(sizes < 1):
        raise ValueError(f"sample_sizes must be a non-empty sequence of positive integers, got {sample_sizes!r}")
    mean = np.atleast_1d(np.asarray(mean0, dtype=np.float64))
    d = mean.shape[0]
    cov = np.asarray(cov0, dtype=np.float64).reshape(d, d)
    if adapt == "mamis_p":
        prior_mean = mean.copy() if prior_mean is None else np.asarray(prior_mean, dtype=np.float64).reshape(d)
        prior_cov = cov.copy() if prior_cov is None else np.asarray(prior_cov, dtype=np.float64).reshape(d, d)
        prior_strength = float(d + 2) if prior_strength is None else float(prior_strength)
        regularised_moments(np.zeros((1, d)), np.ones(1), prior_mean, prior_cov, prior_strength,
                            covariance, data_count)  # validates the arguments before any target call
    T, N = sizes.size, int(sizes.sum())
    starts = np.concatenate([[0], np.cumsum(sizes)])
    log_N = np.log(sizes.astype(np.float64))
    half_d_log_2pi = 0.5 * d * _LOG_2PI
    chunk = max(256, _PASS_FLOATS // d)

    # preallocated storage: samples as columns (d, N) so that per-sample
    # arithmetic runs along contiguous memory
    XT = np.empty((d, N))
    log_f = np.empty(N)
    log_delta = np.empty(N)  # log sum_l N_l q_l(theta_i), updated in place
    norms = np.empty(N)
    comp_mean = np.empty((T, d))
    comp_prec = np.empty((T, d, d))
    comp_prec_mean = np.empty((T, d))  # P_l mu_l
    iu, iu_weight = _packed_upper(d)
    comp_prec_packed = np.empty((T, iu[0].size))
    comp_log_const = np.empty(T)  # log N_l - 1/2 log|Sigma_l| - d/2 log 2 pi
    prop_covs = np.empty((T, d, d))
    est_mean = np.full((T, d), np.nan)
    est_norm = np.full(T, np.nan)
    ess = np.zeros(T)
    n_cubic = np.zeros(T, dtype=np.int64)
    wall = np.zeros(T)
    target_time = target_cpu = 0.0
    n_failed = 0

    t_run, c_run = time.perf_counter(), time.process_time()
    q = _component(mean, cov, "initial importance covariance")
    with linalg.count_ops() as ops:
        for t in range(T):
            a, b, n_t = starts[t], starts[t + 1], int(sizes[t])
            comp_mean[t] = q.mean
            comp_prec[t] = q.chol_inv.T @ q.chol_inv
            comp_prec_mean[t] = comp_prec[t] @ q.mean
            comp_prec_packed[t] = comp_prec[t][iu] * iu_weight
            comp_log_const[t] = log_N[t] - 0.5 * q.log_det - half_d_log_2pi
            prop_covs[t] = q.chol @ q.chol.T
            # step 1: N_t samples from q_t; the target evaluated once per sample
            Xt = q.mean + rng.standard_normal((n_t, d)) @ q.chol.T
            XT[:, a:b] = Xt.T
            tic, cic = time.perf_counter(), time.process_time()
            if vectorized:
                vals = np.asarray(log_target(Xt, rng), dtype=np.float64).reshape(-1)
                if vals.shape[0] != n_t:
                    raise ValueError(f"vectorized log_target returned {vals.shape[0]} values for {n_t} samples")
            else:
                vals = np.fromiter((log_target(x, rng) for x in Xt), dtype=np.float64, count=n_t)
            target_time += time.perf_counter() - tic
            target_cpu += time.process_time() - cic
            if np.any(np.isnan(vals) | (vals == np.inf)):
                bad = int(np.count_nonzero(np.isnan(vals) | (vals == np.inf)))
                raise FloatingPointError(f"log_target returned NaN or +inf for {bad} samples at iteration {t}")
            log_f[a:b] = vals
            hx = Xt if norm_transform is None else np.asarray(norm_transform(Xt))
            norms[a:b] = np.sqrt(np.einsum("ij,ij->i", hx, hx))
            # step 2 (new samples): delta_i = sum_{l <= t} N_l q_l(theta_i)
            log_delta[a:b] = _mixture_at_new(Xt, q.mean, comp_mean[: t + 1], comp_prec[: t + 1],
                                             comp_prec_packed[: t + 1], comp_prec_mean[: t + 1],
                                             comp_log_const[: t + 1])
            # step 3 (past samples) fused with the eq.-10 weights of every
            # sample so far and their weighted sums (one pass over memory)
            m, W, WW, s1, S2, hn = _reweight_pass(
                XT, a, b, q, comp_log_const[t], log_f, log_delta, norms,
                covariance if adapt == "amis" else None, chunk,
            )
            new = None
            if np.isfinite(m):
                ess[t] = W * W / WW
                shift = s1 / W  # E_w[theta] - mu_t
                est_mean[t] = q.mean + shift
                est_norm[t] = hn / W
                # step 4 (AMIS): moment matching on all weighted samples,
                # E_w[(theta - mu_t)(...)^T] - shift shift^T = weighted covariance
                if adapt == "amis":
                    S = S2 / W - (np.outer(shift, shift) if covariance == "full" else shift * shift)
                    new = (est_mean[t], S if covariance == "full" else np.diag(S))
            if adapt != "amis":  # step 4 (MAMIS): this iteration's samples, weights f / q_t
                lw = log_f[a:b] - _log_q_columns(XT[:, a:b], q.mean, q.chol_inv, -0.5 * q.log_det - half_d_log_2pi)
                mt = lw.max()
                if np.isfinite(mt):
                    if adapt == "mamis":
                        new = weighted_moments(Xt, np.exp(lw - mt), covariance)
                    else:  # MAMIS-P: the same weights, the regularised moment match
                        new = regularised_moments(Xt, np.exp(lw - mt), prior_mean, prior_cov, prior_strength,
                                                  covariance, data_count)
            if new is not None:
                try:
                    q = _component(new[0], new[1], f"moment-matched importance covariance (iteration {t})")
                except np.linalg.LinAlgError:
                    new = None
            n_failed += new is None
            n_cubic[t] = cost_offset + ops.cubic
            wall[t] = time_offset + time.perf_counter() - t_run
    run_time, run_cpu = time.perf_counter() - t_run, time.process_time() - c_run

    return AMISResult(
        samples=np.ascontiguousarray(XT.T), log_target=log_f, log_mixture=log_delta,
        log_weights=log_f - (log_delta - math.log(N)), iteration=np.repeat(np.arange(T), sizes),
        sample_sizes=sizes, proposal_means=comp_mean, proposal_covs=prop_covs,
        estimate_mean=est_mean, estimate_norm=est_norm, ess=ess, n_cubic=n_cubic, wall_time=wall,
        next_mean=q.mean, next_cov=q.chol @ q.chol.T, target_time=target_time,
        bookkeeping_time=run_time - target_time, target_cpu_time=target_cpu,
        bookkeeping_cpu_time=run_cpu - target_cpu, n_target_evals=N, n_failed_adaptations=int(n_failed),
        adapt=adapt, covariance=covariance, tuning_n_cubic=int(cost_offset), tuning_wall_time=float(time_offset),
        **ops.trouble(),
    )


# ---------------------------------------------------------------------------
# the paper's configurations
# ---------------------------------------------------------------------------
def amis(rng, log_target, mean0, cov0, *, n_iterations: int = 100, n_per_iteration: int = 50,
         covariance: str = "full", **kw) -> AMISResult:
    """AMIS with constant N_t (Alg. 1).

    The defaults (T = 100, N_t = 50) are the library's, those of ``gpbayes.AMIS``, sized for a
    first run; Table 3's T = 1120, N_t = 25 (RBF) and T = 280, N_t = 100 (ARD) are the paper's,
    passed explicitly by the reproduction.
    """
    return run_amis(rng, log_target, mean0, cov0, [n_per_iteration] * n_iterations,
                    adapt="amis", covariance=covariance, **kw)


def mamis_sample_sizes(n_iterations: int = 30, base: int = 0, slope: int = 20, first: int = 1) -> list[int]:
    """N_t = base + slope * t for t = first, ..., first + n_iterations - 1.

    Table 3 writes N_t = 26 t (RBF, T = 46) and 3000 + 1000 t (ARD, T = 5)
    without saying where t starts; N_0 = 26 * 0 = 0 is impossible, so the
    default is t = 1, ..., T (26 t then totals 28,106 samples, matching
    AMIS's 1120 x 25 = 28,000).  The defaults (T = 30, N_t = 20 t, 9,300
    samples) are the library's, those of ``gpbayes.MAMIS``, sized for a first
    run; the paper's 26 t and 3000 + 1000 t are passed explicitly by the
    reproduction (``gpbayes_repro.experiments.amis``).
    """
    sizes = [base + slope * t for t in range(first, first + n_iterations)]
    if min(sizes) < 1:
        raise ValueError(f"sample sizes must be positive, got {sizes[:3]}...")
    return sizes


def mamis(rng, log_target, mean0, cov0, sample_sizes, *, covariance: str = "full", **kw) -> AMISResult:
    """MAMIS (Marin et al. 2014): adaptation from the current iteration's samples only."""
    return run_amis(rng, log_target, mean0, cov0, sample_sizes, adapt="mamis", covariance=covariance, **kw)


def mamis_p(rng, log_target, mean0, cov0, sample_sizes, *, covariance: str = "full", prior_mean=None,
            prior_cov=None, prior_strength: float | None = None, data_count: str = "ess", **kw) -> AMISResult:
    """MAMIS-P (Sec. 4.5.2, last paragraph; Fig. 7 bottom-right): MAMIS with a regularised step 4.

    Alg. 1 with MAMIS's adaptation (this iteration's samples, weights
    f / q_t), the moment match replaced by ``regularised_moments`` (the
    posterior of gamma under a normal-inverse-Wishart prior centred on the
    Gaussian approximation N(prior_mean, prior_cov)); the output weights are
    eq. 10's, as for AMIS/MAMIS.

    Choices the paper leaves open (it gives no equation or prior strength):
    the prior is centred on q_0 = N(mean0, cov0) unless told otherwise --
    in the experiments that is the Laplace approximation N(m, (-H)^-1)
    (Sec. 4.3.1), the paper's "Gaussian approximation to the posterior";
    it is fixed over the iterations (each MAMIS update uses only the
    current samples, so each is regularised towards the same prior rather
    than chained); its strength defaults to nu0 = d + 2 pseudo-samples, the
    smallest integer for which the inverse-Wishart prior has a finite mean,
    i.e. the weakest prior that still keeps Sigma full rank; the data count
    as their ESS (``data_count="ess"``).  The sample sizes are MAMIS's
    (Table 3 gives none for MAMIS-P; it was run only on Housing ARD).
    ``prior_strength=0`` is MAMIS up to rounding.
    """
    return run_amis(rng, log_target, mean0, cov0, sample_sizes, adapt="mamis_p", covariance=covariance,
                    prior_mean=prior_mean, prior_cov=prior_cov, prior_strength=prior_strength,
                    data_count=data_count, **kw)


def amis_then_mamis(
    rng,
    log_target,
    mean0,
    cov0,
    *,
    n_tuning_samples: int = 1000,
    n_per_iteration_amis: int = 50,
    mamis_sizes: Sequence[int],
    covariance: str = "full",
    **kw,
) -> tuple[AMISResult, AMISResult]:
    """Table 5: AMIS for ``n_tuning_samples`` (tuning), then MAMIS from AMIS's last proposal.

    Returns (mamis_result, amis_tuning_result).  The MAMIS run's cumulative
    costs and times start from the AMIS run's totals (its
    ``tuning_n_cubic`` is the "end of tuning" of Figs. 7-8); its estimates
    use the MAMIS samples only.  Table 5: 13,000 or 26,000 tuning samples,
    then N_t = 1000 t or 5000 t.  (Table 5 prices 13,000 tuning samples at
    "4333" n^3 operations, i.e. n^3/3 per Cholesky -- the flop count of a
    Cholesky factorisation -- whereas ``n_cubic`` counts 1 per Cholesky, as
    Sec. 4.4 does; divide by 3 to compare with Table 5.)  The tuning defaults
    (1,000 samples, 50 per iteration) are the library's, those of ``gpbayes.AMISToMAMIS``.
    """
    n_it = math.ceil(n_tuning_samples / n_per_iteration_amis)
    sizes = [n_per_iteration_amis] * n_it
    sizes[-1] = n_tuning_samples - n_per_iteration_amis * (n_it - 1)
    tuning = run_amis(rng, log_target, mean0, cov0, sizes, adapt="amis", covariance=covariance, **kw)
    kw = {k: v for k, v in kw.items() if k not in ("cost_offset", "time_offset")}
    result = run_amis(rng, log_target, tuning.next_mean, tuning.next_cov, mamis_sizes, adapt="mamis",
                      covariance=covariance, cost_offset=int(tuning.n_cubic[-1]),
                      time_offset=float(tuning.wall_time[-1]), **kw)
    return result, tuning


def pm_amis(rng, noisy_log_target, mean0, cov0, *, n_iterations: int = 20, n_per_iteration: int = 100,
            covariance: str = "full", **kw) -> AMISResult:
    """PM-AMIS (Sec. 3.1): AMIS on a noisy log target, each estimate stored once.

    ``noisy_log_target(psi, rng)`` returns log p~(y | psi) + log p(psi), e.g.
    ``estimators.importance.PseudoMarginalTarget``.  The defaults T = 20,
    N_t = 100 are the library's, those of ``gpbayes.PMAMIS``, sized for a
    first run (2,000 noisy estimates); Table 3's T = 60, N_t = 400 are the
    paper's, passed explicitly by the reproduction.  Full covariance, as the
    paper ("We update the full covariance of the importance density during
    the adaptation process", Sec. 4.3.2).
    """
    return run_amis(rng, noisy_log_target, mean0, cov0, [n_per_iteration] * n_iterations,
                    adapt="amis", covariance=covariance, **kw)
