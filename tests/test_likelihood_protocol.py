"""A likelihood defined in this file alone runs through the library (issue 23, item 3).

``CLogLog`` (binary labels, complementary log-log link) is written here and
nowhere else: it defines its log density, three derivatives and label check,
and inherits from ``gpbayes.likelihoods.Likelihood`` the Gauss-Hermite
tilted moments (EP), the moment-matched and Newton site fits (M&A eqs. 12-13)
and the quadrature predictive.  Each use is checked against something computed
independently: brute-force integrals of p(y | f) N(f; 0, K) on n = 1-3, dense
linear algebra, scipy's adaptive quadrature.
"""

import itertools
import math

import arviz as az
import numpy as np
import pytest
import xarray as xr
from scipy import integrate, optimize

import gpbayes as gb
from gpbayes import classification, kernels, priors
from gpbayes import site_approximations as sites
from gpbayes.approx import ep_approximation, laplace_approximation
from gpbayes.estimators.importance import PseudoMarginalTarget
from gpbayes.likelihoods import Likelihood, Probit
from gpbayes.mcmc import hyper_slice, pseudo_marginal
from gpbayes.representations import LatentGaussianModel


# ---------------------------------------------------------------------------
# the new likelihood: all of it
# ---------------------------------------------------------------------------
class CLogLog(Likelihood):
    """p(y = +1 | f) = 1 - exp(-exp(f)), p(y = -1 | f) = exp(-exp(f)), y in {-1, +1}.

    With u = e^f, m = 1 - e^-u, E = e^-u and D(u) = u E / m (= d1 for y = +1):
    d2 = u D'(u), d3 = u D'(u) + u^2 D''(u), D' = E (m - u) / m^2,
    D'' = E (2u - u m - 2m) / m^3; for y = -1 every derivative is -u.
    """

    name = "cloglog"

    def check_targets(self, y):
        y = np.asarray(y, dtype=np.float64)
        bad = np.setdiff1d(np.unique(y), [-1.0, 1.0])
        if y.ndim != 1 or bad.size:
            raise ValueError(f"cloglog likelihood needs labels in {{-1, +1}}; found {bad[:10].tolist()}")
        return y

    @staticmethod
    def _parts(f):
        u = np.exp(f)
        return u, -np.expm1(-u), np.exp(-u)

    def log_lik(self, y, f):
        u, m, _ = self._parts(f)
        return np.where(y > 0, np.log(m), -u)

    def d1(self, y, f):
        u, m, E = self._parts(f)
        return np.where(y > 0, u * E / m, -u)

    def d2(self, y, f):
        u, m, E = self._parts(f)
        return np.where(y > 0, u * E * (m - u) / m**2, -u)

    def d3(self, y, f):
        u, m, E = self._parts(f)
        return np.where(y > 0, u * E * (m - u) / m**2 + u * u * E * (2 * u - u * m - 2 * m) / m**3, -u)


LIK = CLogLog()


# ---------------------------------------------------------------------------
# independent references
# ---------------------------------------------------------------------------
def quad(fn, lo=-np.inf, hi=np.inf):
    return integrate.quad(fn, lo, hi, limit=400, epsabs=1e-13, epsrel=1e-11)[0]


def tilted_by_quad(y, mu, s2):
    """log Z, tilted mean and variance of p(y | f) N(f; mu, s2) by adaptive quadrature."""
    sd = math.sqrt(s2)
    w = lambda f: math.exp(float(LIK.log_lik(y, f)) - 0.5 * (f - mu) ** 2 / s2) / (sd * math.sqrt(2 * math.pi))
    lo, hi = mu - 12 * sd, mu + 12 * sd
    Z = quad(w, lo, hi)
    m1 = quad(lambda f: f * w(f), lo, hi) / Z
    m2 = quad(lambda f: (f - m1) ** 2 * w(f), lo, hi) / Z
    return math.log(Z), m1, m2


def tensor_grid(K, n_points):
    """Nodes F (N, n) and weights (N,) of E_{N(0, K)}[g(f)] by a tensor Gauss-Hermite rule."""
    t, w = np.polynomial.hermite_e.hermegauss(n_points)
    w = w / w.sum()
    n = K.shape[0]
    Z = np.array(list(itertools.product(t, repeat=n)))
    W = np.prod(np.array(list(itertools.product(w, repeat=n))), axis=1)
    return Z @ np.linalg.cholesky(K).T, W


def exact_log_Z(K, y, n_points=60):
    """log int prod_i p(y_i | f_i) N(f; 0, K) df, brute force (n <= 3)."""
    F, W = tensor_grid(K, n_points)
    return float(np.log(W @ np.exp(np.sum(LIK.log_lik(y, F), axis=1))))


def small_problem(n, seed=0, amplitude=1.5):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n, 1))
    K = amplitude * np.exp(-0.5 * (X - X.T) ** 2 / 0.6**2) + 1e-8 * np.eye(n)
    y = np.where(rng.uniform(size=n) < 0.5, -1.0, 1.0)
    y[0] = 1.0
    return X, K, y


# ---------------------------------------------------------------------------
# the class itself, and the protocol's fallbacks
# ---------------------------------------------------------------------------
def test_the_test_likelihood_satisfies_the_protocol_and_its_derivatives():
    assert isinstance(LIK, Likelihood)
    y = np.array([1.0, 1.0, 1.0, -1.0, -1.0, -1.0])
    f = np.array([-3.0, 0.2, 2.5, -2.0, 0.0, 1.7])
    assert np.allclose(np.exp(LIK.log_lik(y, f)), np.where(y > 0, 1 - np.exp(-np.exp(f)), np.exp(-np.exp(f))))
    eps = 1e-5
    for lo, hi in ((LIK.log_lik, LIK.d1), (LIK.d1, LIK.d2), (LIK.d2, LIK.d3)):
        np.testing.assert_allclose(hi(y, f), (lo(y, f + eps) - lo(y, f - eps)) / (2 * eps), rtol=1e-6, atol=1e-9)
    with pytest.raises(ValueError, match="cloglog likelihood needs labels"):
        LIK.check_targets(np.array([0.0, 1.0]))


@pytest.mark.parametrize("y,mu,s2", [(1.0, 0.3, 0.5), (-1.0, 1.2, 4.0), (1.0, -2.5, 9.0), (-1.0, -0.7, 0.05)])
def test_quadrature_tilted_moments_match_adaptive_quadrature(y, mu, s2):
    lZ, d1, d2 = LIK.tilted_moments(np.array([y]), np.array([mu]), np.array([s2]))
    ref_lZ, m1, v = tilted_by_quad(y, mu, s2)
    # R&W eq. 3.58 in derivative form: mean = mu + s2 d1, variance = s2 + s2^2 d2
    np.testing.assert_allclose(lZ[0], ref_lZ, rtol=0, atol=1e-9)
    np.testing.assert_allclose(mu + s2 * d1[0], m1, rtol=0, atol=1e-9)
    np.testing.assert_allclose(s2 + s2 * s2 * d2[0], v, rtol=1e-8)


def test_quadrature_fallback_reproduces_the_probit_closed_forms():
    class QuadratureProbit(Probit):  # the probit with its closed forms removed
        tilted_moments = Likelihood.tilted_moments
        predictive_mean = Likelihood.predictive_mean
        site_fit = Likelihood.site_fit

    q, p = QuadratureProbit(), Probit()
    y = np.array([1.0, -1.0, 1.0, -1.0])
    mu, s2 = np.array([0.0, 2.0, -3.0, 0.4]), np.array([0.3, 1.0, 6.0, 20.0])
    for a, b in zip(q.tilted_moments(y, mu, s2), p.tilted_moments(y, mu, s2)):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(q.predictive_mean(mu, s2), p.predictive_mean(mu, s2), atol=1e-8)
    for a, b in zip(q.site_fit(y, s2), p.site_fit(y, s2)):
        np.testing.assert_allclose(a, b, rtol=1e-8)


# ---------------------------------------------------------------------------
# Laplace and EP
# ---------------------------------------------------------------------------
def test_laplace_mode_and_log_marginal_against_dense_algebra():
    _, K, y = small_problem(3, seed=1)
    a = laplace_approximation(K, y, LIK, tol=1e-12)
    Kinv = np.linalg.inv(K)
    res = optimize.minimize(lambda f: -(np.sum(LIK.log_lik(y, f)) - 0.5 * f @ Kinv @ f), np.zeros(3),
                            jac=lambda f: -(LIK.d1(y, f) - Kinv @ f), method="BFGS", options={"gtol": 1e-12})
    np.testing.assert_allclose(a.m, res.x, atol=1e-6)
    W = -LIK.d2(y, a.m)
    # R&W eq. 3.32: log q(y) = log p(y | f^) - 1/2 f^T K^-1 f^ - 1/2 log |I + W^1/2 K W^1/2|
    ref = np.sum(LIK.log_lik(y, a.m)) - 0.5 * a.m @ Kinv @ a.m - 0.5 * np.linalg.slogdet(
        np.eye(3) + np.sqrt(W)[:, None] * K * np.sqrt(W)[None, :])[1]
    np.testing.assert_allclose(a.log_marginal, ref, rtol=1e-10)


def test_ep_is_exact_for_one_observation():
    # one site: the tilted distribution is the posterior, so log Z_EP = log Z and q = p(f | y)
    for y, s2 in ((1.0, 0.7), (-1.0, 3.0)):
        e = ep_approximation(np.array([[s2]]), np.array([y]), LIK, tol=1e-12, site_tol=1e-11, max_iter=1000)
        ref_lZ, m1, v = tilted_by_quad(y, 0.0, s2)
        np.testing.assert_allclose(e.log_marginal, ref_lZ, atol=1e-9)
        np.testing.assert_allclose(e.m[0], m1, atol=1e-8)
        np.testing.assert_allclose(e.covariance()[0, 0], v, rtol=1e-7)


@pytest.mark.parametrize("n", [2, 3])
def test_ep_and_laplace_log_marginals_against_brute_force(n):
    # brute force: a 60^n-point tensor rule (80 points per axis agree to 3e-9); EP's own error here is
    # 2e-6 ... 3.5e-3, Laplace's 2e-3 ... 0.12 (both measured, seeds 0-5)
    ep_err, la_err = [], []
    for seed in range(6):
        _, K, y = small_problem(n, seed=seed)
        exact = exact_log_Z(K, y)
        par, seq = (ep_approximation(K, y, LIK, mode=mode, tol=1e-12) for mode in ("parallel", "sequential"))
        assert par.converged and seq.converged
        np.testing.assert_allclose(par.log_marginal, seq.log_marginal, atol=1e-9)  # one fixed point
        ep_err.append(abs(par.log_marginal - exact))
        la_err.append(abs(laplace_approximation(K, y, LIK).log_marginal - exact))
    assert max(ep_err) < 5e-3 and max(la_err) < 0.2
    assert np.mean(ep_err) < 0.2 * np.mean(la_err)  # EP the closer, as for the probit (Kuss & Rasmussen 2005)


def test_ep_fixed_point_matches_brute_force_tilted_moments():
    # at EP's fixed point each marginal of q equals the moments of its tilted distribution (R&W eqs. 3.56-3.58)
    _, K, y = small_problem(3, seed=4)
    e = ep_approximation(K, y, LIK, mode="sequential", tol=1e-13)
    Sigma = e.covariance()
    for i in range(3):
        tau_c = 1.0 / Sigma[i, i] - e.w[i]
        nu_c = e.m[i] / Sigma[i, i] - e.nu[i]
        _, m1, v = tilted_by_quad(y[i], nu_c / tau_c, 1.0 / tau_c)
        np.testing.assert_allclose([e.m[i], Sigma[i, i]], [m1, v], rtol=1e-6, atol=1e-8)


def test_an_approximation_the_likelihood_does_not_list_is_refused():
    class NoEP(CLogLog):
        approximations = ("laplace",)

    _, K, y = small_problem(2)
    with pytest.raises(NotImplementedError, match="EP is not offered for the cloglog"):
        ep_approximation(K, y, NoEP())


# ---------------------------------------------------------------------------
# pseudo-marginal MH
# ---------------------------------------------------------------------------
KERNEL = kernels.SquaredExponential(1, parameterisation="fg", nugget=1e-8)
PRIOR = priors.IndependentPrior((priors.Gamma(1.0, 1.0), priors.Gamma(1.1, 0.1)))


@pytest.mark.parametrize("approx", ["laplace", "ep"])
def test_importance_estimate_of_the_marginal_is_unbiased_on_brute_force(approx):
    X, _, y = small_problem(2, seed=5)
    psi = np.log([0.6, 1.5])
    K = KERNEL(psi, X)
    target = PseudoMarginalTarget(X, y, KERNEL, LIK, PRIOR, approx=approx, n_imp=20_000)
    est = target(psi, np.random.default_rng(0)) - PRIOR.log_density(psi)
    # the importance weights' relative sd is ~0.1 here, so 20,000 draws put log p~ within ~2e-3 of log Z
    np.testing.assert_allclose(est, exact_log_Z(K, y), atol=5e-3)


@pytest.mark.parametrize("approx", ["laplace", "ep"])
def test_pseudo_marginal_chain_runs_and_repeats_bit_for_bit(approx):
    rng = np.random.default_rng(7)
    X = rng.uniform(-2, 2, size=(15, 1))
    y = np.where(np.sin(2 * X[:, 0]) + 0.3 * rng.standard_normal(15) > 0, 1.0, -1.0)

    def chain(seed):
        target = PseudoMarginalTarget(X, y, KERNEL, LIK, PRIOR, approx=approx, n_imp=8)
        return pseudo_marginal.run_chain(np.random.default_rng(seed), target, np.log([1.0, 1.0]), n_adapt=20,
                                         n_burn=0, n_draws=30, proposal_cov=0.1 * np.eye(2), adapt_on=approx)

    a, b = chain(3), chain(3)
    np.testing.assert_array_equal(a.draws, b.draws)
    assert np.all(np.isfinite(a.stats["lp"]))
    assert 0 < np.mean(a.stats["accepted"]) < 1
    assert len(np.unique(a.draws[:, 0])) > 1


# ---------------------------------------------------------------------------
# slice sampling in the M&A representations
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("y", [1.0, -1.0])
@pytest.mark.parametrize("s2", [0.1, 1.0, 8.0])
def test_site_fit_is_the_moment_matched_gaussian_of_eq_12(y, s2):
    s, h = sites.site_noise_and_centre(LIK, np.array([y]), np.array([s2]))
    _, mu, v = tilted_by_quad(y, 0.0, s2)
    np.testing.assert_allclose(1.0 / s[0], 1.0 / v - 1.0 / s2, rtol=1e-6)  # M&A eq. 12
    np.testing.assert_allclose(h[0], mu / v, rtol=1e-6)


def test_taylor_fit_finds_no_finite_maximum_and_thresholds():
    # log L_i is monotone in f for a binary link: the maximum is at +-inf, so S = cap and h = 0 (M&A Sec. 5)
    s, h = sites.taylor_noise_and_centre(LIK, np.array([1.0, -1.0, 1.0]), np.array([1.0, 2.0, 0.5]))
    np.testing.assert_array_equal(s, 1e6 * np.array([1.0, 2.0, 0.5]))
    np.testing.assert_array_equal(h, 0.0)


@pytest.mark.parametrize("method", ["surr-site", "post-site", "post-taylor"])
def test_slice_representations_run_with_the_new_likelihood(method):
    rng = np.random.default_rng(11)
    X = rng.uniform(-2, 2, size=(12, 1))
    y = np.where(np.sin(2 * X[:, 0]) > 0, 1.0, -1.0)
    kern = kernels.SquaredExponential(1, parameterisation="ma", nugget=1e-6)
    model = LatentGaussianModel(kern, X, LIK, y, priors.IndependentPrior((priors.Gamma(2.0, 0.5),) * 2))
    psi0 = np.zeros(2)
    f0 = np.linalg.cholesky(model.covariance(psi0)) @ rng.standard_normal(12)
    runs = [hyper_slice.run_chain(np.random.default_rng(2), model, psi0, f0, method, n_burn=5, n_draws=15)
            for _ in range(2)]
    np.testing.assert_array_equal(runs[0].draws, runs[1].draws)
    assert np.all(np.isfinite(runs[0].stats["lp"])) and len(np.unique(runs[0].draws[:, 0])) > 1
    # the chain's recorded log L(f) is the new likelihood's
    assert np.all(runs[0].extra["log_likelihood"] < 0)


# ---------------------------------------------------------------------------
# the predictive
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("mean,var", [(0.0, 1.0), (-1.5, 0.3), (1.2, 4.0)])
def test_predictive_against_numerical_integration(mean, var):
    sd = math.sqrt(var)
    pdf = lambda f: math.exp(-0.5 * (f - mean) ** 2 / var) / (sd * math.sqrt(2 * math.pi))
    p1 = quad(lambda f: -math.expm1(-math.exp(f)) * pdf(f), mean - 12 * sd, mean + 12 * sd)
    np.testing.assert_allclose(LIK.predictive_mean(np.array([mean]), np.array([var]))[0], p1, atol=1e-7)
    np.testing.assert_allclose(LIK.log_predictive_density(np.array([1.0, -1.0]), mean, var),
                               np.log([p1, 1.0 - p1]), atol=1e-9)


def test_gb_predict_with_the_new_likelihood_against_dense_algebra_and_quadrature():
    rng = np.random.default_rng(5)
    X = rng.uniform(-2, 2, size=(25, 2))
    y = np.where(X[:, 0] - X[:, 1] ** 2 + 0.5 * rng.standard_normal(25) > 0, "yes", "no")
    clf = gb.GPClassifier(X, y, likelihood=LIK)
    assert clf.likelihood is LIK and "ep-ml" in gb.methods(clf)
    psi = np.log([1.2, 0.9, 1.5])
    # a one-draw result in gb.sample's schema: psi in unconstrained_posterior, one variable per hyperparameter
    idata = az.InferenceData(unconstrained_posterior=xr.Dataset(
        {f"psi_{i}": (("chain", "draw"), psi[None, None, i]) for i in range(psi.size)}))
    Xn = np.array([[0.3, -0.2], [-1.5, 1.0], [1.8, 0.1]])
    p = gb.predict(clf, idata, Xn)["probability"].values
    # Laplace latent predictive by dense algebra (R&W eqs. 3.21, 3.24), then E[1 - exp(-e^f)] by quadrature
    Xs = clf.transform(Xn)
    K, Ks, kss = clf.kernel(psi, clf.X), clf.kernel(psi, clf.X, Xs), clf.kernel.diag(psi, Xs)
    a = laplace_approximation(K, clf.y, LIK)
    mean = Ks.T @ np.linalg.solve(K, a.m)
    var = kss - np.einsum("ij,ij->j", Ks, np.linalg.solve(K + np.diag(1.0 / a.w), Ks))
    ref = [quad(lambda f: -math.expm1(-math.exp(f)) * math.exp(-0.5 * (f - m) ** 2 / v) / math.sqrt(2 * math.pi * v),
                m - 12 * math.sqrt(v), m + 12 * math.sqrt(v)) for m, v in zip(mean, var)]
    np.testing.assert_allclose(p, ref, atol=1e-7)


def test_ep_predictive_approaches_the_exact_posterior_predictive():
    # n = 2: p(y_* = +1 | y) = Z(y, y_* = +1) / Z(y), both by brute force over (f, f_*)
    X, y = np.array([[-0.4], [0.2]]), np.array([-1.0, -1.0])
    psi, Xt = np.log([0.6, 1.5]), np.array([[-0.1], [1.5]])
    p_ep = classification.predictive_probabilities(X, y, Xt, KERNEL, psi, "ep", likelihood=LIK, tol=1e-12)
    p_la = classification.predictive_probabilities(X, y, Xt, KERNEL, psi, "laplace", likelihood=LIK)
    log_Z = exact_log_Z(KERNEL(psi, X), y)
    exact = np.array([np.exp(exact_log_Z(KERNEL(psi, np.vstack([X, x])), np.r_[y, 1.0]) - log_Z) for x in Xt])
    np.testing.assert_allclose(p_ep, exact, atol=3e-3)  # EP's own error: 1.2e-3 and 4e-6
    assert np.all(np.abs(p_ep - exact) < np.abs(p_la - exact))  # Laplace's: 4.8e-2 and 2.9e-3
    prior = LIK.predictive_mean(np.zeros(2), KERNEL.diag(psi, Xt))
    assert exact[0] < prior[0] - 0.25  # the two labels near x = -0.1 moved its answer by 0.31


def test_gb_sample_end_to_end_with_the_new_likelihood():
    rng = np.random.default_rng(8)
    X = rng.uniform(-2, 2, size=(20, 1))
    clf = gb.GPClassifier(X, np.sin(2 * X[:, 0]) > 0, likelihood=LIK)
    idata = gb.sample(clf, method="pseudo-marginal", approximation="ep", n_imp=4, chains=1, draws=10, warmup=10,
                      seed=0, progress=False)
    assert idata.posterior.attrs["likelihood"] == "cloglog"
    assert np.all(np.isfinite(idata.sample_stats["lp"].values))
    p = gb.predict(clf, idata, np.array([[-1.0], [1.0]]))["probability"].values
    assert np.all((p > 0) & (p < 1))
