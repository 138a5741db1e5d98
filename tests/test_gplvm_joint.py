"""The supervised GPLVM's exact joint samplers (``gpbayes.gplvm.joint``; methods ``joint-nuts``, ``joint-gibbs``).

(a) The target: its value is eq. 1 + eq. 2 + the prior (against ``pseudo_marginal.log_likelihood``), its
    gradient matches central finite differences.
(b) Geweke joint-distribution tests (Geweke 2004; ``tests/geweke.py``) of the NUTS transition and of every
    Gibbs move (each beside the psi block and the elliptical slice updates, which move what it does not), and the power to flag a
    transition whose target is wrong.
(c) Agreement with an answer computed independently: a 1-latent-dimension toy with N = 2 points, whose
    posterior moments are nested Gauss-Hermite quadrature over (psi, V); and the two samplers against
    each other on a small simulation.
(d) The method objects through ``gb.sample``: groups, Z, starts, label-invariant summaries.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

import geweke
from gplvm_quadrature import Q_MEAN, Q_PRIOR, Q_X, Q_Y, quadrature_moments, z_scores
import gpbayes as gb
from gpbayes import diagnostics, linalg, priors
from gpbayes.gplvm import SupervisedGPLVM, optimise_variational
from gpbayes.gplvm import joint
from gpbayes.gplvm import pseudo_marginal as pm
from gpbayes.mcmc import hmc, nuts, runner

# ---------------------------------------------------------------------------
# (a) the target
# ---------------------------------------------------------------------------
def _model(n=12, kz=2, ky=3, seed=0):
    rng = np.random.default_rng(seed)
    X = np.linspace(-1.5, 1.5, n)[:, None]
    Y = np.column_stack([np.cos(2.0 * X[:, 0] + k) for k in range(ky)]) + 0.1 * rng.standard_normal((n, ky))
    model = SupervisedGPLVM(X, Y, kz, min(n, 5))
    prior = priors.IndependentPrior(tuple(priors.Gamma(1.0, 0.001 if p == "beta" else 0.1)
                                          for p in model.param_names))
    return model, prior


def _point(model, rng):
    psi = np.log([0.8, 1.5, 0.7, 1.2, 20.0])[: model.n_params]
    V = rng.standard_normal((model.n, model.latent_dim))
    return psi, V


def test_value_is_the_joint_density():
    model, prior = _model()
    target = joint.GPLVMJointPosterior(model, prior)
    psi, V = _point(model, np.random.default_rng(1))
    x = np.concatenate([psi, V.ravel()])
    Z = model.latent_prior_chol(psi) @ V
    expect = (prior.log_density(psi) + pm.log_likelihood(model, psi, Z) - 0.5 * np.sum(V * V)
              - 0.5 * V.size * math.log(2 * math.pi))
    value, _ = target(x)
    assert value == pytest.approx(expect, rel=1e-12, abs=1e-9)
    np.testing.assert_allclose(target.latent(x), Z, rtol=1e-10, atol=1e-10)  # K_z built apart: rounding
    # the start's inverse map: [psi, L^-1 Z] gives back Z (L_z is ill-conditioned: compare Z, not V)
    np.testing.assert_allclose(target.latent(joint.joint_start(target, psi, Z)), Z, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("kz", [1, 2])
def test_gradient_matches_finite_differences(kz):
    model, prior = _model(kz=kz)
    target = joint.GPLVMJointPosterior(model, prior)
    psi, V = _point(model, np.random.default_rng(2))
    psi = np.concatenate([psi[:1], psi[1:1 + kz], psi[-2:]])
    x = np.concatenate([psi, V.ravel()])
    with linalg.count_ops() as ops:
        _, grad = target(x)
    assert ops.cubic == 5  # 2 Cholesky + 1 triangular inverse + the adjoint's 2 triangular solves
    h = 1e-6
    fd = np.array([(target(x + h * e)[0] - target(x - h * e)[0]) / (2 * h) for e in np.eye(x.size)])
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-5)


def test_refused_points():
    model, prior = _model()
    target = joint.GPLVMJointPosterior(model, prior)
    psi, V = _point(model, np.random.default_rng(3))
    bad = np.concatenate([psi, V.ravel()])
    bad[-model.n * model.latent_dim - 1] = 800.0  # beta = e^800: overflow, refused not raised
    value, grad = target(bad)
    assert value == -math.inf and np.all(np.isnan(grad))
    with pytest.raises(ValueError, match="expected shape"):
        target(np.zeros(3))


# ---------------------------------------------------------------------------
# (b) Geweke
# ---------------------------------------------------------------------------
GW_N, GW_KZ, GW_KY = 6, 2, 2
GW_X = np.linspace(0.0, 3.0, GW_N)[:, None]
GW_MEAN = np.array([math.log(0.5), 0.0, 0.0, 0.0, math.log(4.0)])  # sigma, theta_1, theta_2, theta_S, beta
GW_SD = 0.3
GW_PRIOR = priors.IndependentPrior(tuple(priors.LogNormal(m, GW_SD) for m in GW_MEAN))
GW_NAMES = ("log sigma", "log theta_1", "log theta_2", "log theta_S", "log beta", "(log sigma)^2",
            "(log theta_1)^2", "(log beta)^2", "mean z_1^2", "mean z_2^2", "mean z_1 z_2", "mean y^2")
GW_FACTOR = 0.25 * np.eye(5)


def _gw_model(Y):
    return SupervisedGPLVM(GW_X, Y, GW_KZ, 3)


def gw_params(rng):
    psi = GW_MEAN + GW_SD * rng.standard_normal(5)
    return psi, _gw_model(np.zeros((GW_N, 1))).latent_prior_chol(psi) @ rng.standard_normal((GW_N, GW_KZ))


def gw_data(rng, params):
    psi, Z = params
    model = _gw_model(np.zeros((GW_N, 1)))
    _, psi_f, log_beta = model.split(psi)
    C = model.latent_kernel(psi_f, Z) + math.exp(-log_beta) * np.eye(GW_N)
    return np.linalg.cholesky(C) @ rng.standard_normal((GW_N, GW_KY))


def gw_test_fn(params, Y):
    psi, Z = params
    return np.array([*psi, psi[0] ** 2, psi[1] ** 2, psi[4] ** 2, np.mean(Z[:, 0] ** 2), np.mean(Z[:, 1] ** 2),
                     np.mean(Z[:, 0] * Z[:, 1]), np.mean(Y**2)])


def _gibbs_transition(moves, prior=GW_PRIOR, n_steps=2):
    def transition(rng, params, Y):
        psi, Z = params
        model = _gw_model(Y)
        V = linalg.solve_triangular(model.latent_prior_chol(psi), Z, lower=True)
        state = joint.gibbs_init(model, prior, psi, V)
        for _ in range(n_steps):
            state, _ = joint.gibbs_step(rng, state, model, prior, GW_FACTOR, n_ess=1, moves=moves)
        return state.psi.copy(), state.Z.copy()

    return transition


def _nuts_transition(rotations):
    """NUTS (fixed step size and identity mass), followed by the latent rotations with ``rotations`` (the
    composition ``gb.methods.GPLVMJointNUTS(rotations=True)`` runs)."""
    def transition(rng, params, Y):
        psi, Z = params
        target = joint.GPLVMJointPosterior(_gw_model(Y), GW_PRIOR)
        state = nuts.init(joint.joint_start(target, psi, Z), target)
        mass = hmc.mass_matrix("identity", dim=target.dim)
        for _ in range(2):
            state, _ = nuts.step(rng, state, target, 0.2, mass, 8, "multinomial")
            if rotations:
                state, _ = joint.rotate_latent(rng, state, target)
        return state.position[: target.p].copy(), target.latent(state.position)

    return transition


@functools.lru_cache(maxsize=1)
def _gw_mc():
    return geweke.marginal_conditional(np.random.default_rng(42), gw_params, gw_data, gw_test_fn, 10_000)


def _gw(transition, seed, n_sc):
    sc = geweke.successive_conditional(np.random.default_rng(seed), gw_params, gw_data, transition, gw_test_fn, n_sc)
    return geweke.compare(_gw_mc(), sc, names=GW_NAMES, alpha=0.01)


@pytest.mark.parametrize("moves", [("ess", "block"), ("ess", "block", "centred"), ("ess", "slice"),
                                   ("ess", "block", "scale"), ("ess", "block", "rotation"), joint.MOVES],
                         ids=["ess", "centred", "slice", "scale", "rotation", "all"])
def test_geweke_gibbs_moves(moves):
    res = _gw(_gibbs_transition(moves), 11, 2000)
    assert res.batches_ok, res.summary()
    assert not res.reject, res.summary()


def test_geweke_nuts():
    """NUTS composed with the latent rotations (``GPLVMJointNUTS(rotations=True)``, the reproduction's Case 1
    set); plain NUTS is checked against quadrature below (``test_posterior_matches_quadrature``)."""
    res = _gw(_nuts_transition(True), 12, 1500)
    assert res.batches_ok, res.summary()
    assert not res.reject, res.summary()


def test_geweke_flags_a_wrong_target():
    """Power: the same test rejects the full Gibbs kernel when it targets another prior (log beta's mean
    shifted by one prior sd) than the one the data were simulated from."""
    shifted = priors.IndependentPrior(tuple(priors.LogNormal(m + (GW_SD if k == 4 else 0.0), GW_SD)
                                            for k, m in enumerate(GW_MEAN)))
    assert _gw(_gibbs_transition(joint.MOVES, prior=shifted), 13, 1500).reject


def test_moves_are_checked():
    model, prior = _model()
    psi, V = _point(model, np.random.default_rng(4))
    state = joint.gibbs_init(model, prior, psi, V)
    with pytest.raises(ValueError, match="moves"):
        joint.gibbs_step(np.random.default_rng(0), state, model, prior, 0.1 * np.eye(5), moves=("jump",))


# ---------------------------------------------------------------------------
# (c) against quadrature, and the two samplers against each other
# ---------------------------------------------------------------------------
# N = 2 points, k_x = k_z = 1, k_y = 4 outputs (``gplvm_quadrature``): posterior moments by nested
# Gauss-Hermite quadrature over psi (under the prior) and V (under N(0, I)).


def test_quadrature_converged():
    m1, s1 = quadrature_moments()
    m2, s2 = quadrature_moments(n_psi=11, n_v=32)
    np.testing.assert_allclose(m1, m2, atol=2e-3)
    np.testing.assert_allclose(s1, s2, atol=2e-3)


@functools.lru_cache(maxsize=None)
def _toy_chains(method):
    model = SupervisedGPLVM(Q_X, Q_Y, 1, 2)
    rngs = [np.random.default_rng(s) for s in (5, 6)]
    # The standard errors below come from each run's own ESS, so the length sets only how small a bias is
    # visible.  The Gibbs kernel is nearly independent here (ESS ~0.8 per draw on psi: 13,000 of 2 x 8,000
    # measured), so 2 x 2,000 draws after 500 of warm-up suffice: measured max |z| 2.25 over the 8 moments,
    # split R-hat 1.000, and theta_S's posterior mean 28 standard errors from its prior mean (the not-vacuous
    # check asks for 5; a bias of 4/28 of what the data do to theta_S fails the |z| < 4 check).  A Gibbs run
    # whose prior for theta_S, or for beta, is shifted by a quarter of a prior sd fails it: |z| 14.9, 14.2.
    if method == "gibbs":
        specs = [joint.gibbs_chain_spec(model, Q_PRIOR, Q_MEAN, np.zeros((2, 1)), n_warmup=500) for _ in rngs]
        n = 2000
    else:
        target = joint.GPLVMJointPosterior(model, Q_PRIOR)
        specs = [joint.chain_spec(np.concatenate([Q_MEAN, np.zeros(2)]), target, n_adapt=500) for _ in rngs]
        n = 2000
    return np.stack([runner.run_spec(r, s, n_draws=n).draws for r, s in zip(rngs, specs)])


@pytest.mark.parametrize("method", ["gibbs", "nuts"])
def test_posterior_matches_quadrature(method):
    draws = _toy_chains(method)
    zs, shifts, report = z_scores(draws)
    assert diagnostics.split_rhat(draws[..., 0], rank_normalize=True) < 1.02, report
    assert np.max(np.abs(zs)) < 4.0, report
    # not vacuous: the data move a posterior mean (theta_S's) away from the prior's by many standard errors
    assert np.max(shifts) > 5.0, report


def _pm_toy_chains():
    """Gadd et al.'s pseudo-marginal sampler (Alg. 2, eq. 6) on the same toy, where its estimate is good
    (Q = 32 draws of a q fitted once at the prior mean, re-used at every psi: q is a function of psi alone,
    so the chain is exact).  Measured at 2 x 8,000 draws: max |z| 1.08 against quadrature, acceptance 0.28."""
    model = SupervisedGPLVM(Q_X, Q_Y, 1, 2)
    ref = optimise_variational(model, Q_MEAN).params
    config = pm.PMGibbsConfig(blocks=(np.arange(4),), n_imp=32, adapt_start=100, adapt_stop=500,
                              reference_params=ref, vb_options={"max_iter": 0})
    return np.stack([pm.run_chain(np.random.default_rng(s), model, Q_PRIOR, Q_MEAN, config, 3000,
                                  n_warmup=500).draws for s in (11, 12)])


def test_pseudo_marginal_sampler_agrees_with_the_exact_samplers():
    """Issue 40: the paper's sampler and the exact joint sampler agree where the former mixes -- each
    against quadrature, and the two chains' means against each other (z from both runs' ESS-based se)."""
    pm_draws, gibbs = _pm_toy_chains(), _toy_chains("gibbs")
    zs, shifts, report = z_scores(pm_draws)
    assert diagnostics.split_rhat(pm_draws[..., 0], rank_normalize=True) < 1.02, report
    assert np.max(np.abs(zs)) < 4.0, report
    assert np.max(shifts) > 5.0, report
    for k in range(4):
        a, b = pm_draws[..., k], gibbs[..., k]
        se = math.hypot(float(np.std(a)) / math.sqrt(diagnostics.ess(a, method="mean")),
                        float(np.std(b)) / math.sqrt(diagnostics.ess(b, method="mean")))
        assert abs(a.mean() - b.mean()) / se < 4.0, (k, a.mean(), b.mean(), se)


# ---------------------------------------------------------------------------
# (d) the methods through gb.sample
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def gplvm_model():
    rng = np.random.default_rng(0)
    x = np.linspace(0, 2 * np.pi, 12)
    Y = np.column_stack([np.cos(x), np.sin(x), np.cos(1.2 * x)]) + 0.1 * rng.standard_normal((12, 3))
    return gb.GPLVMRegressor(x[:, None], Y, n_inducing=5, ml_restarts=1, ml_max_iter=100)


@pytest.mark.parametrize("method", ["joint-gibbs", "joint-nuts"])
def test_methods_through_sample(gplvm_model, method):
    assert method in gb.methods(gplvm_model)
    idata = gb.sample(gplvm_model, method=method, chains=2, draws=20, n_warmup=20, seed=3, progress=False)
    assert idata.posterior["Z"].shape == (2, 20, 12, 2)
    assert set(idata.posterior["output_inverse_squared_lengthscale"].dims) == {"chain", "draw", "latent"}
    again = gb.sample(gplvm_model, method=method, chains=2, draws=20, n_warmup=20, seed=3, progress=False)
    np.testing.assert_array_equal(idata.posterior["Z"].values, again.posterior["Z"].values)  # bit for bit


def test_nuts_with_rotations_through_sample(gplvm_model):
    method = gb.methods.GPLVMJointNUTS(rotations=True)
    idata = gb.sample(gplvm_model, method=method, chains=1, draws=10, n_warmup=10, seed=4, progress=False)
    again = gb.sample(gplvm_model, method=method, chains=1, draws=10, n_warmup=10, seed=4, progress=False)
    np.testing.assert_array_equal(idata.posterior["Z"].values, again.posterior["Z"].values)  # bit for bit
    plain = gb.sample(gplvm_model, method="joint-nuts", chains=1, draws=10, n_warmup=10, seed=4, progress=False)
    assert not np.array_equal(idata.posterior["Z"].values, plain.posterior["Z"].values)  # the rotations ran
    with pytest.raises(ValueError, match="rotations"):
        gb.methods.GPLVMJointNUTS(rotations="yes")


def test_init_gives_psi_and_Z(gplvm_model):
    psi = np.tile(gplvm_model.ml_fit.psi, (2, 1))
    Z = np.zeros((2, 12, 2)) + np.linspace(-1, 1, 12)[None, :, None] * np.array([1.0, -0.5])
    method = gb.methods.GPLVMJointGibbs(n_ess=0)
    idata = gb.sample(gplvm_model, method=method, chains=2, draws=1, n_warmup=1, seed=3, progress=False,
                      init={"psi": psi, "Z": Z})
    assert idata.posterior["Z"].shape == (2, 1, 12, 2)
    with pytest.raises(ValueError, match="shape"):
        gb.sample(gplvm_model, method=method, chains=2, draws=1, n_warmup=1, seed=3, progress=False,
                  init={"psi": psi, "Z": Z[:, :5]})


def test_label_invariant_quantities():
    model, _ = _model()
    psi = np.array([[0.1, 1.0, -2.0, 0.3, 4.0], [0.1, -2.0, 1.0, 0.3, 4.0]])
    inv = joint.label_invariant(model, psi)
    np.testing.assert_array_equal(inv["log_max_theta"], [1.0, 1.0])
    np.testing.assert_array_equal(inv["log_min_theta"], [-2.0, -2.0])
    assert set(inv) == {"sigma_0", "log_max_theta", "log_min_theta", "theta_S", "beta"}


def test_method_options_are_checked():
    with pytest.raises(ValueError, match="n_ess"):
        gb.methods.GPLVMJointGibbs(n_ess=-1)
    with pytest.raises(ValueError, match="mass_adaptation"):
        gb.methods.GPLVMJointNUTS(mass_adaptation="full")


def test_gibbs_likelihood_is_eq1():
    """The Gibbs kernel's lean log p(Y | Z, psi) against ``pseudo_marginal.log_likelihood`` (eq. 1)."""
    model, _ = _model(n=20, ky=4)
    rng = np.random.default_rng(8)
    for _ in range(5):
        psi, Z = 0.5 * rng.standard_normal(5), rng.standard_normal((20, 2))
        assert joint._log_lik(model, psi, Z) == pytest.approx(pm.log_likelihood(model, psi, Z), rel=1e-12, abs=1e-10)
    with linalg.count_ops() as ops:
        joint._log_lik(model, psi, Z)
    assert ops.cubic == 1
