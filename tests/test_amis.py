"""AMIS / MAMIS / AMIS->MAMIS / PM-AMIS against known answers (fixed seeds)."""

import math

import numpy as np
import pytest
from scipy.special import digamma, gammaln, polygamma
from scipy.stats import multivariate_normal

from gpbayes import amis as A
from gpbayes.kernels import SquaredExponential
from gpbayes.priors import Gamma, IndependentPrior
from gpbayes.regression import GPRegression

MEAN = np.array([1.0, -2.0, 0.5])
COV = np.array([[1.0, 0.8, 0.1], [0.8, 2.0, -0.3], [0.1, -0.3, 0.5]])
PREC = np.linalg.inv(COV)


def gauss_target(x, rng):
    d = x - MEAN
    return float(-0.5 * d @ PREC @ d)


# log-gamma x normal: z = log u, u ~ Gamma(a, 1); x1 | z ~ N(z, s^2) (skewed, known moments)
A_SHAPE, S_COND = 3.0, 0.5
SKEW_MEAN = np.array([digamma(A_SHAPE)] * 2)
_v = float(polygamma(1, A_SHAPE))
SKEW_COV = np.array([[_v, _v], [_v, _v + S_COND**2]])


def skew_target(x, rng):
    return float(A_SHAPE * x[0] - math.exp(x[0]) - gammaln(A_SHAPE) - 0.5 * ((x[1] - x[0]) / S_COND) ** 2)


def z_scores(res, mean, cov):
    """|error| / MC error for E[theta] and Cov[theta]; MC error sqrt(Var_pi(h) / ESS of the weights)."""
    w = res.normalised_weights
    ess = 1.0 / np.sum(w * w)
    X = res.samples
    out = []
    p = len(mean)
    for i in range(p):
        out.append(abs(w @ X[:, i] - mean[i]) / math.sqrt(cov[i, i] / ess))
        for j in range(i, p):
            y = (X[:, i] - mean[i]) * (X[:, j] - mean[j])  # E_pi[y] = cov[i, j]
            var_y = cov[i, i] * cov[j, j] + cov[i, j] ** 2  # exact for a Gaussian
            out.append(abs(w @ y - cov[i, j]) / math.sqrt(var_y / ess))
    return np.array(out), ess


@pytest.mark.parametrize("covariance", ["full", "diagonal"])
def test_amis_gaussian_moments(covariance):
    res = A.amis(np.random.default_rng(0), gauss_target, np.zeros(3), 4.0 * np.eye(3),
                 n_iterations=40, n_per_iteration=100, covariance=covariance)
    z, ess = z_scores(res, MEAN, COV)
    assert ess > 1000
    assert np.all(z < 4), z
    # step 4: the next proposal is the weighted moment match of all samples
    w = res.normalised_weights
    mu = w @ res.samples
    S = (res.samples - mu).T @ ((res.samples - mu) * w[:, None])
    np.testing.assert_allclose(res.next_mean, mu, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(res.next_cov, S if covariance == "full" else np.diag(np.diag(S)),
                               rtol=1e-8, atol=1e-12)
    if covariance == "diagonal":
        assert np.all(res.proposal_covs[1:][:, ~np.eye(3, dtype=bool)] == 0)
    # the running estimate is the self-normalised mean over all samples so far
    np.testing.assert_allclose(res.estimate_mean[-1], res.normalised_weights @ res.samples, rtol=1e-10)
    norms = np.linalg.norm(res.samples, axis=1)
    assert res.estimate_norm[-1] == pytest.approx(res.normalised_weights @ norms, rel=1e-10)


def test_mamis_gaussian_moments():
    sizes = A.mamis_sample_sizes(10, 0, 80)  # 80, 160, ..., 800
    res = A.mamis(np.random.default_rng(1), gauss_target, np.zeros(3), 4.0 * np.eye(3), sizes)
    assert res.adapt == "mamis" and len(res.samples) == sum(sizes)
    z, ess = z_scores(res, MEAN, COV)
    assert ess > 1000
    assert np.all(z < 4), z


@pytest.mark.parametrize("covariance", ["full", "diagonal"])
def test_mamis_p_gaussian_moments(covariance):
    # Gaussian target; q_0 (the prior's centre) deliberately off: the eq.-10 weights still give
    # self-normalised moments within Monte Carlo error sqrt(Var / ESS) of the analytic ones
    sizes = A.mamis_sample_sizes(10, 0, 80)
    res = A.mamis_p(np.random.default_rng(1), gauss_target, np.zeros(3), 4.0 * np.eye(3), sizes,
                    covariance=covariance)
    assert res.adapt == "mamis_p" and len(res.samples) == sum(sizes) and res.n_failed_adaptations == 0
    z, ess = z_scores(res, MEAN, COV)
    assert ess > 1000
    assert np.all(z < 4), z
    # step 4: the next proposal is the regularised match of the last iteration's samples, weights f / q_t
    last = res.iteration == len(sizes) - 1
    X = res.samples[last]
    lw = res.log_target[last] - multivariate_normal(res.proposal_means[-1], res.proposal_covs[-1]).logpdf(X)
    w = np.exp(lw - lw.max())
    ess_t = w.sum() ** 2 / (w @ w)
    mu, S = A.weighted_moments(X, w)
    nu0 = 3 + 2  # default d + 2
    dev = mu - 0.0
    ref_mu = (nu0 * np.zeros(3) + ess_t * mu) / (nu0 + ess_t)
    ref_S = (nu0 * 4.0 * np.eye(3) + ess_t * S + nu0 * ess_t / (nu0 + ess_t) * np.outer(dev, dev)) / (nu0 + ess_t)
    if covariance == "diagonal":
        ref_S = np.diag(np.diag(ref_S))
    np.testing.assert_allclose(res.next_mean, ref_mu, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(res.next_cov, ref_S, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("covariance", ["full", "diagonal"])
def test_regularised_moments_are_pooled_pseudo_sample_moments(covariance):
    # independent answer: equal weights + nu0 pseudo-samples with mean m0 and covariance S0 exactly
    # (m0 +- sqrt(d) L e_i, 2d of them, each repeated) pooled with the data, plain moments
    rng = np.random.default_rng(5)
    d, n = 3, 40
    X = rng.normal(size=(n, d)) @ np.diag([1.0, 2.0, 0.5]) + 1.0
    m0 = np.array([0.5, -1.0, 2.0])
    S0 = np.array([[2.0, 0.3, 0.0], [0.3, 1.0, 0.2], [0.0, 0.2, 0.7]])
    L = np.linalg.cholesky(S0)
    pseudo = np.concatenate([m0 + math.sqrt(d) * L[:, i] * s for i in range(d) for s in (1, -1)]).reshape(-1, d)
    reps = 4
    pooled = np.concatenate([X, np.tile(pseudo, (reps, 1))])
    ref_mu = pooled.mean(axis=0)
    ref_S = np.cov(pooled.T, bias=True)
    for count in ("ess", "n"):  # equal weights: ESS = n
        mu, S = A.regularised_moments(X, np.full(n, 0.7), m0, S0, reps * 2 * d, covariance, data_count=count)
        np.testing.assert_allclose(mu, ref_mu, rtol=1e-12)
        np.testing.assert_allclose(S, ref_S if covariance == "full" else np.diag(np.diag(ref_S)), rtol=1e-12,
                                   atol=1e-14)
    # a single dominating weight: MAMIS's match is rank 0, the regularised one stays full rank
    w = np.zeros(n)
    w[3] = 1.0
    _, S_mamis = A.weighted_moments(X, w, "full")
    mu, S = A.regularised_moments(X, w, m0, S0, 5.0, "full")
    assert np.linalg.matrix_rank(S_mamis) == 0 and np.linalg.matrix_rank(S) == d
    np.testing.assert_allclose(mu, (5.0 * m0 + X[3]) / 6.0, rtol=1e-12)


def test_mamis_p_reduces_to_mamis_without_prior():
    sizes = A.mamis_sample_sizes(6, 20, 40)
    ref = A.mamis(np.random.default_rng(4), skew_target, np.array([1.0, 1.0]), 2.0 * np.eye(2), sizes)
    off = A.mamis_p(np.random.default_rng(4), skew_target, np.array([1.0, 1.0]), 2.0 * np.eye(2), sizes,
                    prior_strength=0.0)
    on = A.mamis_p(np.random.default_rng(4), skew_target, np.array([1.0, 1.0]), 2.0 * np.eye(2), sizes)
    np.testing.assert_allclose(off.proposal_covs, ref.proposal_covs, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(off.log_weights, ref.log_weights, rtol=1e-10, atol=1e-10)
    # and the default prior does change the adaptation (the comparison above can fail)
    assert np.max(np.abs(on.proposal_covs[1:] - ref.proposal_covs[1:])) > 1e-3
    # an overwhelming prior pins every proposal to q_0 = the prior
    pinned = A.mamis_p(np.random.default_rng(4), skew_target, np.array([1.0, 1.0]), 2.0 * np.eye(2), sizes,
                       prior_strength=1e12)
    np.testing.assert_allclose(pinned.proposal_means, np.ones((6, 2)), atol=1e-8)
    np.testing.assert_allclose(pinned.proposal_covs, np.tile(2.0 * np.eye(2), (6, 1, 1)), atol=1e-8)


def test_mamis_p_keeps_full_rank_where_mamis_degenerates():
    # a narrow target far in q_0's tail: one sample dominates the first iteration's weights
    far = np.array([4.0, -4.0])
    narrow = lambda x, rng: float(-0.5 * np.sum((x - far) ** 2) / 0.01)
    sizes = [20, 40, 60]
    ref = A.mamis(np.random.default_rng(0), narrow, np.zeros(2), np.eye(2), sizes)
    reg = A.mamis_p(np.random.default_rng(0), narrow, np.zeros(2), np.eye(2), sizes)
    w_ev = np.linalg.eigvalsh(ref.proposal_covs[1])
    r_ev = np.linalg.eigvalsh(reg.proposal_covs[1])
    assert w_ev.min() < 1e-6 * w_ev.max() or ref.n_failed_adaptations > 0
    assert r_ev.min() > 0.1 * r_ev.max()


@pytest.mark.parametrize("scheme", ["amis", "amis-d", "mamis", "mamis-p"])
def test_skewed_target_moments(scheme):
    rng = np.random.default_rng(2)
    m0, c0 = np.array([0.0, 0.0]), 2.0 * np.eye(2)
    if scheme == "mamis":
        res = A.mamis(rng, skew_target, m0, c0, A.mamis_sample_sizes(10, 0, 100))
    elif scheme == "mamis-p":
        res = A.mamis_p(rng, skew_target, m0, c0, A.mamis_sample_sizes(10, 0, 100))
    else:
        res = A.amis(rng, skew_target, m0, c0, n_iterations=50, n_per_iteration=100,
                     covariance="diagonal" if scheme == "amis-d" else "full")
    w = res.normalised_weights
    ess = 1.0 / np.sum(w * w)
    for i in range(2):
        se = math.sqrt(SKEW_COV[i, i] / ess)
        assert abs(w @ res.samples[:, i] - SKEW_MEAN[i]) < 4 * se
    mu = w @ res.samples
    cov = (res.samples - mu).T @ ((res.samples - mu) * w[:, None])
    np.testing.assert_allclose(cov, SKEW_COV, atol=8 * SKEW_COV.max() / math.sqrt(ess))


def test_moment_check_can_fail():
    # the same check rejects a run on the wrong target
    shifted = lambda x, rng: gauss_target(x - np.array([0.15, 0.0, 0.0]), rng)
    res = A.amis(np.random.default_rng(0), shifted, np.zeros(3), 4.0 * np.eye(3), n_iterations=40,
                 n_per_iteration=100)
    z, _ = z_scores(res, MEAN, COV)
    assert np.any(z > 4)


def direct_log_mixture(samples, means, covs, sizes):
    """Non-incremental reference: log sum_t N_t q_t(theta) from scratch, with scipy."""
    terms = [math.log(n) + multivariate_normal(m, c).logpdf(samples) for m, c, n in zip(means, covs, sizes)]
    return np.logaddexp.reduce(np.array(terms), axis=0)


@pytest.mark.parametrize("adapt", ["amis", "mamis", "mamis_p"])
def test_incremental_weights_equal_direct_recomputation(adapt):
    sizes = [30] * 25 if adapt == "amis" else A.mamis_sample_sizes(8, 10, 20)
    res = A.run_amis(np.random.default_rng(3), skew_target, np.array([2.0, -1.0]), 3.0 * np.eye(2), sizes,
                     adapt=adapt)
    ref = direct_log_mixture(res.samples, res.proposal_means, res.proposal_covs, sizes)
    np.testing.assert_allclose(res.log_mixture, ref, rtol=0, atol=1e-10)
    np.testing.assert_allclose(res.log_weights, res.log_target - ref + math.log(sum(sizes)), rtol=0, atol=1e-10)
    # intermediate estimates: the weights as they were after iteration t
    starts = np.cumsum(sizes)
    for t in (0, 3, len(sizes) // 2):
        b = starts[t]
        ref_t = direct_log_mixture(res.samples[:b], res.proposal_means[: t + 1], res.proposal_covs[: t + 1],
                                   sizes[: t + 1])
        lw = res.log_target[:b] - ref_t
        w = np.exp(lw - lw.max())
        w /= w.sum()
        np.testing.assert_allclose(res.estimate_mean[t], w @ res.samples[:b], rtol=1e-10, atol=1e-12)
        assert res.ess[t] == pytest.approx(1.0 / np.sum(w * w), rel=1e-10)


def test_mixture_update_is_incremental(monkeypatch):
    """Each iteration meets past samples with the ONE new component, new samples with all components."""
    calls_past, calls_new = [], []
    orig_q, orig_new = A._log_q_centred, A._mixture_at_new

    def spy_q(DT, *args):
        calls_past.append(DT.shape[1])
        return orig_q(DT, *args)

    def spy_new(Xt, centre, means, *args):  # noqa: D401
        calls_new.append((Xt.shape[0], means.shape[0]))
        return orig_new(Xt, centre, means, *args)

    monkeypatch.setattr(A, "_log_q_centred", spy_q)
    monkeypatch.setattr(A, "_mixture_at_new", spy_new)
    monkeypatch.setattr(A, "_PASS_FLOATS", 3 * 256)  # several chunks per pass
    A.amis(np.random.default_rng(0), gauss_target, np.zeros(3), np.eye(3), n_iterations=15, n_per_iteration=40)
    # step 3: q_t at the 40 t past samples only (in chunks); total sum_t 40 t, not sum_t t * 40 t
    assert sum(calls_past) == sum(40 * t for t in range(15))
    assert max(calls_past) <= 256
    # step 2: all t + 1 components at the 40 new samples only
    assert calls_new == [(40, t + 1) for t in range(15)]


# ---------------------------------------------------------------------------
# tiny GP regression: AMIS against quadrature
# ---------------------------------------------------------------------------
LOG_NOISE = math.log(0.05)


def tiny_gp_posterior():
    rng = np.random.default_rng(7)
    X = np.sort(rng.uniform(0, 4, size=(20, 1)), axis=0)
    y = np.sin(2.0 * X[:, 0]) + math.sqrt(0.05) * rng.normal(size=20)
    model = GPRegression(X, y, SquaredExponential(1, ard=False, parameterisation="amis"))
    prior = IndependentPrior((Gamma(1.0, 1.0), Gamma(1.0, 1.0)))

    def log_post(psi):  # psi = (log tau, log sigma), noise fixed
        try:
            return model.log_marginal(np.array([psi[0], psi[1], LOG_NOISE])) + prior.log_density(psi)
        except np.linalg.LinAlgError:
            return -math.inf

    return log_post


def test_amis_gp_regression_matches_quadrature():
    log_post = tiny_gp_posterior()
    # quadrature on a 0.1-spaced grid in psi (the posterior is smooth and negligible at the edges;
    # log tau has an exponential left tail from the Gamma prior, hence the wide box)
    g0 = np.linspace(-9.0, 2.0, 111)
    g1 = np.linspace(-4.0, 4.5, 86)
    L = np.array([[log_post((a, b)) for b in g1] for a in g0])
    P = np.exp(L - L.max())
    assert P[[0, -1], :].max() < 1e-8 and P[:, [0, -1]].max() < 1e-8
    Z = P.sum()
    G0, G1 = np.meshgrid(g0, g1, indexing="ij")
    mean = np.array([(P * G0).sum() / Z, (P * G1).sum() / Z])
    var = np.array([(P * (G0 - mean[0]) ** 2).sum() / Z, (P * (G1 - mean[1]) ** 2).sum() / Z])

    res = A.amis(np.random.default_rng(8), A.exact(log_post), np.array([0.0, 0.0]), np.eye(2),
                 n_iterations=30, n_per_iteration=100)
    w = res.normalised_weights
    ess = 1.0 / np.sum(w * w)
    assert ess > 1000
    est = w @ res.samples
    assert np.all(np.abs(est - mean) < 4 * np.sqrt(var / ess)), (est, mean, np.sqrt(var / ess))
    # one Cholesky per target evaluation, cumulative per iteration
    assert res.n_cubic[-1] == res.n_target_evals == 3000
    np.testing.assert_array_equal(res.n_cubic, 100 * np.arange(1, 31))
    assert np.all(np.diff(res.wall_time) >= 0)
    assert res.target_time > 0 and res.bookkeeping_time > 0


# ---------------------------------------------------------------------------
# AMIS -> MAMIS switch, PM-AMIS
# ---------------------------------------------------------------------------
def test_mamis_sample_sizes_of_table_3():
    assert sum(A.mamis_sample_sizes(46, 0, 26)) == 28106
    assert A.mamis_sample_sizes(5, 3000, 1000) == [4000, 5000, 6000, 7000, 8000]
    assert A.mamis_sample_sizes(5, 3000, 1000, first=0)[0] == 3000
    with pytest.raises(ValueError):
        A.mamis_sample_sizes(3, 0, 26, first=0)


def test_amis_then_mamis():
    res, tuning = A.amis_then_mamis(np.random.default_rng(4), gauss_target, np.zeros(3), 4.0 * np.eye(3),
                                    n_tuning_samples=1300, n_per_iteration_amis=100,
                                    mamis_sizes=A.mamis_sample_sizes(6, 0, 200))
    assert tuning.adapt == "amis" and len(tuning.samples) == 1300
    assert res.adapt == "mamis" and len(res.samples) == sum(range(200, 1201, 200))
    # MAMIS starts from AMIS's last fitted proposal; costs continue from AMIS's
    np.testing.assert_array_equal(res.proposal_means[0], tuning.next_mean)
    np.testing.assert_allclose(res.proposal_covs[0], tuning.next_cov, rtol=1e-12, atol=1e-14)
    assert res.tuning_wall_time == tuning.wall_time[-1]
    assert res.tuning_n_cubic == tuning.n_cubic[-1]
    assert res.wall_time[0] > tuning.wall_time[-1]
    z, _ = z_scores(res, MEAN, COV)
    assert np.all(z < 4), z


def test_pm_amis_stores_each_noisy_estimate_once():
    sigma = 0.5
    calls = []

    def noisy(x, rng):  # log f + z - sigma^2/2, z ~ N(0, sigma^2): unbiased for f
        v = gauss_target(x, rng) + sigma * rng.normal() - 0.5 * sigma**2
        calls.append(v)
        return v

    res = A.pm_amis(np.random.default_rng(5), noisy, np.zeros(3), 4.0 * np.eye(3), n_iterations=30,
                    n_per_iteration=200)
    assert len(calls) == res.n_target_evals == 6000
    np.testing.assert_array_equal(res.log_target, np.array(calls))
    z, ess = z_scores(res, MEAN, COV)
    assert np.all(z[[0, 4, 7]] < 4), z  # the means (the noise inflates the covariance tails' error)


def _small_pm_target(approx, n_imp, **options):
    """A probit pseudo-marginal target on 15 points, isotropic kernel (Xiong et al.'s parameterisation)."""
    from gpbayes.estimators.importance import PseudoMarginalTarget
    from gpbayes.likelihoods import Probit

    rng = np.random.default_rng(6)
    X = rng.normal(size=(15, 2))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=15) > 0, 1.0, -1.0)
    kernel = SquaredExponential(2, ard=False, parameterisation="amis")
    prior = IndependentPrior((Gamma(1.0, 1.0), Gamma(1.0, 1.0)))
    return PseudoMarginalTarget(X, y, kernel, Probit(), prior, approx=approx, n_imp=n_imp, approx_options=options)


def test_pm_amis_with_pseudo_marginal_target():
    target = _small_pm_target("laplace", 4)
    res = A.pm_amis(np.random.default_rng(7), target, np.zeros(2), np.eye(2), n_iterations=3, n_per_iteration=20)
    assert res.n_target_evals == 60 == target.n_calls
    assert res.n_cubic[-1] == target.total_n_cubic > 60  # K and the approximation's factorisations
    assert np.all(np.isfinite(res.log_weights))


def test_pm_amis_records_non_converged_approximations():
    """EP stopped at its iteration limit inside the target is counted in the result, not lost."""
    import warnings

    runs = {}
    for max_iter in (1, 200):
        target = _small_pm_target("ep", 2, max_iter=max_iter)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            runs[max_iter] = A.pm_amis(np.random.default_rng(7), target, np.zeros(2), np.eye(2), n_iterations=2,
                                       n_per_iteration=10)
    # one update cannot meet the stopping rule: every evaluation with a finite prior is counted
    assert runs[1].n_not_converged == int(np.sum(np.isfinite(runs[1].log_target))) > 0
    assert runs[200].n_not_converged == 0
    assert runs[1].n_jitter == runs[1].n_failed_estimates == 0


# ---------------------------------------------------------------------------
# reproducibility and edge cases
# ---------------------------------------------------------------------------
def test_same_seed_same_output_bit_for_bit():
    def runs(seed):
        noisy = lambda x, rng: gauss_target(x, rng) + 0.3 * rng.normal()
        return [
            A.amis(np.random.default_rng(seed), gauss_target, np.zeros(3), np.eye(3), n_iterations=10,
                   n_per_iteration=30),
            A.mamis(np.random.default_rng(seed), gauss_target, np.zeros(3), np.eye(3), [20, 40, 60]),
            A.mamis_p(np.random.default_rng(seed), gauss_target, np.zeros(3), np.eye(3), [20, 40, 60]),
            A.pm_amis(np.random.default_rng(seed), noisy, np.zeros(3), np.eye(3), n_iterations=5,
                      n_per_iteration=30),
        ]

    for a, b, c in zip(runs(1), runs(1), runs(2)):
        for field in ("samples", "log_target", "log_weights", "estimate_mean", "estimate_norm"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
        for field in ("proposal_means", "proposal_covs", "next_cov"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
        assert not np.array_equal(a.samples, c.samples)


def test_zero_target_keeps_proposal():
    res = A.amis(np.random.default_rng(0), lambda x, rng: -math.inf, np.zeros(2), np.eye(2),
                 n_iterations=3, n_per_iteration=10)
    assert res.n_failed_adaptations == 3
    assert np.all(np.isnan(res.estimate_mean)) and np.all(res.ess == 0)
    np.testing.assert_array_equal(res.proposal_means, np.zeros((3, 2)))


def test_partial_support_and_vectorized_target():
    # half-space support: -inf weights are simply zero, estimates stay finite
    def half(X, rng):
        v = -0.5 * np.sum(X * X, axis=1)
        return np.where(X[:, 0] > 0, v, -np.inf)

    res = A.amis(np.random.default_rng(1), half, np.zeros(2), np.eye(2), n_iterations=20, n_per_iteration=200,
                 vectorized=True)
    # E[x0 | x0 > 0] = sqrt(2 / pi) for a standard normal
    w = res.normalised_weights
    ess = 1.0 / np.sum(w * w)
    assert abs(res.estimate_mean[-1, 0] - math.sqrt(2 / math.pi)) < 4 * math.sqrt((1 - 2 / math.pi) / ess)
    assert abs(res.estimate_mean[-1, 1]) < 4 / math.sqrt(ess)


def test_bad_arguments():
    with pytest.raises(ValueError):
        A.run_amis(np.random.default_rng(0), gauss_target, np.zeros(3), np.eye(3), [10, 0])
    with pytest.raises(ValueError):
        A.run_amis(np.random.default_rng(0), gauss_target, np.zeros(3), np.eye(3), [10], adapt="pmc")
    with pytest.raises(ValueError):
        A.run_amis(np.random.default_rng(0), gauss_target, np.zeros(3), np.eye(3), [10], covariance="band")
    with pytest.raises(FloatingPointError):
        A.run_amis(np.random.default_rng(0), lambda x, rng: math.nan, np.zeros(3), np.eye(3), [10])
    for bad in ({"prior_strength": -1.0}, {"prior_strength": math.inf}, {"data_count": "all"}):
        with pytest.raises(ValueError):
            A.mamis_p(np.random.default_rng(0), gauss_target, np.zeros(3), np.eye(3), [10], **bad)
