"""SparseGP's Gaussian noise variance as a sampled hyperparameter, and the sparse models' stationary kernels
(issue 41, point 5; Hensman et al. 2015 with the Gaussian likelihood of their table, Titsias 2009).

Independent answers: central finite differences of the target and the ELBO; at Z = X the exact GP
(``GPRegressor``'s marginal likelihood, R&W Alg. 2.1), against which the sparse target integrated over
v must agree at every psi (Titsias' bound is exact there) and the sampled posteriors within Monte
Carlo error; Gauss-Hermite quadrature against the closed form (G1).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import gpbayes as gb
from gpbayes import kernels, likelihoods, priors
from gpbayes.sparse import svgp
from gpbayes.sparse.target import SparseTarget

STATIONARY = {
    "se": lambda: kernels.SquaredExponential(1, parameterisation="ma"),
    "matern12": lambda: kernels.Matern12(1),
    "matern32": lambda: kernels.Matern32(1),
    "matern52": lambda: kernels.Matern52(1),
    "rq": lambda: kernels.RationalQuadratic(1),
    "periodic": lambda: kernels.Periodic(1),
}


def problem(n: int = 24, seed: int = 0, noise_sd: float = 0.3):
    rng = np.random.default_rng(seed)
    X = np.sort(rng.uniform(-2.0, 2.0, n))[:, None]
    return X, np.sin(2.0 * X[:, 0]) + noise_sd * rng.normal(size=n)


def prior_for(kernel) -> priors.IndependentPrior:
    return priors.IndependentPrior((priors.Gamma(2.0, 0.5),) * kernel.n_params + (priors.InverseGamma(1.0, 0.05),))


def central_differences(f, x, h=1e-6):
    return np.array([(f(x + h * e) - f(x - h * e)) / (2.0 * h) for e in np.eye(x.size)])


# ---------------------------------------------------------------------------
# (G1) and the gradients
# ---------------------------------------------------------------------------
def test_closed_form_gaussian_expectation_is_the_quadrature_of_the_fixed_noise_likelihood():
    """(G1) at log sigma^2 = log s2 equals (Q1) with Gaussian(s2): quadrature is exact for a quadratic."""
    rng = np.random.default_rng(3)
    y, mu, var = rng.normal(size=30), rng.normal(size=(30, 1)), rng.uniform(0.01, 2.0, (30, 1))
    lik = likelihoods.Gaussian(0.37, offset=0.2)
    E, dmu, dvar = svgp.expected_log_lik(lik, y, mu, var, 20)
    E2, dmu2, dvar2, dlog = svgp.gaussian_expected_log_lik(y, mu, var, np.log(0.37), offset=0.2)
    np.testing.assert_allclose(E2, E, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dmu2, dmu, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dvar2, dvar, rtol=1e-10, atol=1e-12)
    fd = (svgp.gaussian_expected_log_lik(y, mu, var, np.log(0.37) + 1e-6, 0.2)[0]
          - svgp.gaussian_expected_log_lik(y, mu, var, np.log(0.37) - 1e-6, 0.2)[0]) / 2e-6
    np.testing.assert_allclose(dlog, fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", sorted(STATIONARY))
def test_sparse_target_gradient_in_every_hyperparameter_and_the_noise_matches_finite_differences(name):
    X, y = problem()
    k = STATIONARY[name]()
    target = SparseTarget(X, y, X[::3], k, likelihoods.Gaussian(), prior_for(k), sample_noise=True)
    assert target.n_params == k.n_params + 1 and target.dim == target.n_inducing + k.n_params + 1
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.normal(size=target.n_inducing), k.initial_psi(X) + 0.2 * rng.normal(size=k.n_params),
                        [np.log(0.2)]])
    value, grad = target.logdensity_and_grad(x)
    assert np.isfinite(value)
    fd = central_differences(target.log_density, x)
    np.testing.assert_allclose(grad, fd, rtol=2e-5, atol=2e-5 * (1.0 + np.abs(fd).max()))


@pytest.mark.parametrize("name", ["matern32", "rq", "periodic"])
def test_sparse_classification_target_takes_a_stationary_kernel(name):
    """The probit sparse target with another stationary kernel: its psi gradient (every parameter's
    diag_vjp entry summed) against finite differences."""
    rng = np.random.default_rng(2)
    X = rng.uniform(-2.0, 2.0, (30, 1))
    y = np.where(np.sin(2.0 * X[:, 0]) + 0.3 * rng.normal(size=30) > 0, 1.0, -1.0)
    k = STATIONARY[name]()
    target = SparseTarget(X, y, X[::4], k, likelihoods.Probit(),
                          priors.IndependentPrior((priors.Gamma(2.0, 0.5),) * k.n_params))
    x = np.concatenate([rng.normal(size=target.n_inducing), k.initial_psi(X) + 0.2 * rng.normal(size=k.n_params)])
    value, grad = target.logdensity_and_grad(x)
    fd = central_differences(target.log_density, x)
    np.testing.assert_allclose(grad, fd, rtol=2e-5, atol=2e-5 * (1.0 + np.abs(fd).max()))


@pytest.mark.parametrize("name", ["se", "matern52"])
def test_elbo_gradient_with_the_noise_matches_finite_differences(name):
    X, y = problem(n=15)
    k = STATIONARY[name]()
    model = svgp.SVGPModel(X, y, k, likelihoods.Gaussian(), prior_for(k), sample_noise=True)
    rng = np.random.default_rng(4)
    M = 5
    params = svgp.SVGPParams(rng.normal(size=(M, 1)) * 0.5, np.tril(rng.normal(size=(1, M, M)) * 0.2) + np.eye(M),
                             X[::3] + 0.05, np.append(k.initial_psi(X), np.log(0.3)))
    _, grad = svgp.elbo_and_grad(model, params)
    x0 = svgp._pack(params, True, True)
    g = svgp._pack(grad, True, True)
    keep = np.flatnonzero(g != 0.0)  # the strict upper triangle of R is not a parameter

    def f(x):
        return svgp.elbo_and_grad(model, svgp._unpack(x, params, True, True), inputs=False)[0]

    fd = central_differences(f, x0)
    np.testing.assert_allclose(g[keep], fd[keep], rtol=2e-5, atol=2e-5 * (1.0 + np.abs(fd).max()))
    assert abs(g[-1]) > 1e-3  # the noise's gradient is exercised, not zero


# ---------------------------------------------------------------------------
# Z = X: the exact GP
# ---------------------------------------------------------------------------
def _log_integral_over_v(target, psi):
    """log of the integral of exp(T1) over v: with a Gaussian likelihood (T1) is quadratic in v,
    c + b^T v - v^T A v / 2, read off its value and v-gradient at v = 0 and at the unit vectors."""
    M = target.n_inducing
    value0, g0 = target.logdensity_and_grad(target.join(np.zeros((M, 1)), psi))
    b = g0[:M]
    A = np.column_stack([b - target.logdensity_and_grad(target.join(e[:, None], psi))[1][:M] for e in np.eye(M)])
    A = 0.5 * (A + A.T)
    sign, logdet = np.linalg.slogdet(A)
    assert sign > 0
    return value0 + 0.5 * b @ np.linalg.solve(A, b) + 0.5 * M * np.log(2.0 * np.pi) - 0.5 * logdet


def _z_equal_x_models(kernel, X, y):
    prior = prior_for(kernel)
    exact = gb.GPRegressor(X, y, kernel=kernel, prior=prior, standardize=False)
    psi0 = np.append(kernel.initial_psi(X), np.log(0.1))
    fit_model = svgp.SVGPModel(X, y, kernel, likelihoods.Gaussian(), prior, sample_noise=True)
    m, R = svgp.optimal_gaussian_q(fit_model, X, psi0)
    sparse = gb.SparseGP(X, y, likelihood="gaussian", kernel=kernel, prior=prior, standardize=False,
                         svgp_fit=svgp.SVGPParams(m, R, X.copy(), psi0))
    return exact, sparse


@pytest.mark.parametrize("name", ["se", "matern52"])
def test_with_Z_equal_X_the_sparse_target_over_v_is_the_exact_marginal_at_every_psi(name):
    """Integrated over v, exp(T1) is Titsias' collapsed bound times p(psi); at Z = X the bound is the exact
    log marginal (R&W Alg. 2.1), so the log densities of theta agree, differences between points too."""
    X, y = problem(n=20)
    k = STATIONARY[name]()
    exact, sparse = _z_equal_x_models(k, X, y)
    assert sparse.sample_noise and sparse.param_names[-1] == "noise_variance"
    assert np.array_equal(sparse.target.Z, X)
    rng = np.random.default_rng(5)
    points = [np.append(k.initial_psi(X), np.log(0.1)) + 0.4 * rng.normal(size=k.n_params + 1) for _ in range(4)]
    sparse_lp = np.array([_log_integral_over_v(sparse.target, p) for p in points])
    exact_lp = np.array([exact.gp.log_marginal(p) + exact.prior.log_density(p) for p in points])
    # the jitter 1e-6 a on K_uu is the only difference
    np.testing.assert_allclose(sparse_lp, exact_lp, rtol=0, atol=1e-3)
    np.testing.assert_allclose(np.diff(sparse_lp), np.diff(exact_lp), rtol=0, atol=1e-3)
    # and the check can fail: the noise at another value moves the log density by far more
    shifted = [p + np.eye(p.size)[-1] * 0.5 for p in points[:1]]
    assert abs(_log_integral_over_v(sparse.target, shifted[0]) - exact_lp[0]) > 0.1


def _log_mean_and_mcse(idata, var: str):
    import arviz as az

    draws = np.log(idata.posterior[var])
    return float(draws.mean()), float(az.mcse(draws.to_dataset(name=var))[var])


def test_with_Z_equal_X_the_noise_posterior_agrees_with_the_exact_gp_within_monte_carlo_error():
    """The sampled posteriors of (log lengthscale, log variance, log noise) under a Matern-5/2 kernel: the
    exact GP by NUTS, the sparse GP at Z = X by joint HMC on (v, psi); z = difference of posterior means
    over the combined MCSE."""
    X, y = problem(n=14, seed=7)
    k = kernels.Matern52(1)
    exact, sparse = _z_equal_x_models(k, X, y)
    common = dict(chains=2, draws=300, n_warmup=200, seed=11, progress=False, cores=1)
    a = gb.sample(exact, method=gb.NUTS(), **common)
    b = gb.sample(sparse, method=gb.JointHMC(), **common)
    for var in ("lengthscale", "signal_variance", "noise_variance"):
        va, sa = _log_mean_and_mcse(a, var)
        vb, sb = _log_mean_and_mcse(b, var)
        z = (vb - va) / np.hypot(sa, sb)
        assert abs(z) < 4.0, (var, va, vb, sa, sb, z)
    # the noise is learnt (the fixed 1.0 of before is far outside the posterior)
    vb, sb = _log_mean_and_mcse(b, "noise_variance")
    assert np.exp(vb) < 0.3


# ---------------------------------------------------------------------------
# the model
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def matern_result():
    X, y = problem(n=40, seed=3)
    model = gb.SparseGP(X, y, likelihood="gaussian", kernel=kernels.Matern52(1), n_inducing=8, maxiter=40)
    idata = gb.sample(model, method=gb.JointHMC(), chains=1, draws=150, n_warmup=150, seed=2, progress=False)
    return X, y, model, idata


def test_a_matern52_sparse_gp_samples_its_noise_and_predicts(matern_result):
    X, y, model, idata = matern_result
    assert model.hyperparameter_names == ["lengthscale", "signal_variance", "noise_variance"]
    post = idata.posterior
    for var in ("lengthscale", "signal_variance", "noise_variance", "v"):
        assert np.all(np.isfinite(post[var].values))
    noise = float(post["noise_variance"].mean())
    assert 0.09 / 4 < noise < 0.09 * 4  # simulated with noise sd 0.3
    X_new = np.linspace(-1.5, 1.5, 7)[:, None]
    pred = gb.predict(model, idata, X_new)
    assert np.all(np.isfinite(pred["f_mean"].values))
    np.testing.assert_allclose(pred["f_mean"].values, np.sin(2.0 * X_new[:, 0]), atol=0.5)


def test_a_result_of_the_noise_sampling_sparse_gp_rebuilds(matern_result):
    X, y, model, idata = matern_result
    X_new = np.linspace(-1.5, 1.5, 5)[:, None]
    a = gb.predict(model, idata, X_new, seed=0)
    b = gb.predict(idata, X_new, seed=0)
    np.testing.assert_array_equal(a["f_mean"].values, b["f_mean"].values)


def test_the_noise_prior_is_set_by_name_and_defaults_to_y_s_units():
    X, y = problem(n=20)
    model = gb.SparseGP(X, 10.0 * y, likelihood="gaussian", n_inducing=5, maxiter=10)
    noise_prior = model.prior.components[-1]
    assert isinstance(noise_prior, priors.InverseGamma)
    np.testing.assert_allclose(noise_prior.scale, 0.01 * np.var(10.0 * y))
    given = priors.InverseGamma(2.0, 1.0)
    model = gb.SparseGP(X, y, likelihood="gaussian", n_inducing=5, maxiter=10, prior={"noise_variance": given})
    assert model.prior.components[-1] == given and model.target.prior.components[-1] == given


def test_sample_noise_false_keeps_the_noise_fixed_and_other_likelihoods_have_none():
    X, y = problem(n=20)
    fixed = gb.SparseGP(X, y, likelihood=likelihoods.Gaussian(0.1), n_inducing=5, maxiter=10, sample_noise=False)
    assert "noise_variance" not in fixed.param_names and not fixed.target.sample_noise
    assert fixed.target.dim == 5 + fixed.kernel.n_params
    counts = np.random.default_rng(0).poisson(2.0, size=20)
    assert not gb.SparseGP(X, counts, likelihood="poisson", n_inducing=5, maxiter=10).sample_noise
    with pytest.raises(ValueError, match="sample_noise=True.*Poisson"):
        gb.SparseGP(X, counts, likelihood="poisson", n_inducing=5, maxiter=10, sample_noise=True)
    with pytest.raises(TypeError, match="sample_noise must be True or False"):
        gb.SparseGP(X, y, likelihood="gaussian", n_inducing=5, maxiter=10, sample_noise="yes")


@pytest.mark.parametrize("kernel, name", [(kernels.Linear(1), "Linear"), (kernels.White(1), "White"),
                                          (kernels.Matern52(1) + kernels.Periodic(1), "Sum"),
                                          (kernels.Matern52(1) * kernels.Periodic(1), "Product")])
def test_a_kernel_the_sparse_gradient_does_not_support_is_refused_naming_it_and_the_allowed_ones(kernel, name):
    X, y = problem(n=20)
    with pytest.raises(TypeError, match=rf"kernel {name} is not supported.*Matern52.*Periodic"):
        gb.SparseGP(X, y, likelihood="gaussian", kernel=kernel, n_inducing=5)
    labels = np.where(y > 0, 1, 0)
    with pytest.raises(TypeError, match=rf"SparseGPClassifier: kernel {name} is not supported"):
        gb.SparseGPClassifier(X, labels, kernel=kernel, n_inducing=5)


def test_predictions_use_each_draws_sampled_noise(matern_result):
    """gb.predict's log predictive density and the posterior predictive y draws read exp(psi_s[-1]) per
    draw, not the likelihood's fixed noise_variance: the density against log mean_s N(y; mu_s, var_s +
    sigma_s^2) computed here from the same draws, and the y draws' spread against f's plus the noise."""
    from scipy.special import logsumexp
    from scipy.stats import norm

    from gpbayes.sparse.target import predict_latent_draws

    X, y, model, idata = matern_result
    X_new = np.linspace(-1.5, 1.5, 4)[:, None]
    y_new = np.sin(2.0 * X_new[:, 0])
    pred = gb.predict(model, idata, X_new, y_new=y_new, seed=0)
    v = idata.posterior["v"].values.reshape(-1, *idata.posterior["v"].shape[2:])
    # psi as sampled, on the model's standardised inputs (the posterior group is in X's units: units="data")
    psi = gb.api.psi_draws(idata).values.reshape(-1, len(model.param_names))
    mu, var = predict_latent_draws(model.target, v, psi, model.transform(X_new))  # the model's input scale
    noise = np.exp(psi[:, -1])[:, None]
    want = logsumexp(norm.logpdf(y_new, mu[..., 0], np.sqrt(var + noise)), axis=0) - math.log(len(psi))
    np.testing.assert_allclose(pred["log_predictive_density"].values, want, rtol=1e-10)
    fixed = logsumexp(norm.logpdf(y_new, mu[..., 0], np.sqrt(var + model.likelihood.noise_variance)), axis=0)
    assert np.max(np.abs(want - (fixed - math.log(len(psi))))) > 0.1  # the fixed noise would give another number
    draws = gb.sample_posterior_predictive(model, idata, X_new=X_new, seed=1, extend=False)["y"].values
    sd_y = draws.reshape(-1, 4).std(axis=0)
    expected = np.sqrt((var + noise).mean(axis=0) + mu[..., 0].var(axis=0))
    np.testing.assert_allclose(sd_y, expected, rtol=0.25)  # 150 draws: the sd within ~25 %
