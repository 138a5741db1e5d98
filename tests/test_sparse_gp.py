"""``gb.SparseGP``: the sparse variational GP of Hensman et al. (2015) with any likelihood.

Its chains are the reproduction's coal study bit for bit (tests/test_reproduction_equals_library.py);
here: the model's checks, its methods, and ``gb.predict``'s latent predictive per draw against
p(f_* | u = L v, theta) computed naively (K_*u K_uu^-1 u and k_** - K_*u K_uu^-1 K_u*).
"""

from __future__ import annotations

import doctest
import warnings

import numpy as np
import pytest

import gpbayes as gb
from gpbayes.kernels import Linear
from gpbayes.io import psi_draws
from gpbayes.likelihoods import Poisson
from gpbayes.methods import default_method


def _counts(n=36, seed=3):
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0.0, 10.0, n))[:, None]
    return t, rng.poisson(2.0 * np.exp(np.sin(t[:, 0]))).astype(float)


@pytest.fixture(scope="module")
def fitted():
    t, y = _counts()
    model = gb.SparseGP(t, y, likelihood=Poisson(exposure=2.0), n_inducing=6, maxiter=40, jitter=1e-10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short chains: not converged
        idata = gb.sample(model, method=gb.JointHMC(), chains=2, draws=15, n_warmup=30, seed=5, progress=False,
                          cores=1)
    return model, idata


def test_the_likelihood_reaches_the_target_and_the_attrs():
    t, y = _counts()
    model = gb.SparseGP(t, y, likelihood="poisson", n_inducing=5, maxiter=10)
    assert isinstance(model.target.likelihood, Poisson) and model.classes is None
    assert model.target.Z.shape == (5, 1)
    assert model.hyperparameter_labels == ["lengthscale", "signal_std"]
    attrs = model._attrs()
    assert attrs["likelihood"] == "poisson" and "classes" not in attrs and attrs["n_inducing"] == 5
    assert gb.methods(model) == ("joint-hmc", "gibbs")
    method, why = default_method(model)
    assert isinstance(method, gb.JointHMC) and why.startswith("SparseGP:")


def test_bad_arguments_name_the_culprit():
    t, y = _counts()
    with pytest.raises(TypeError, match="likelihood must be .*got dict"):
        gb.SparseGP(t, y, likelihood={"poisson": 1})
    with pytest.raises(ValueError, match="unknown likelihood 'poison'"):
        gb.SparseGP(t, y, likelihood="poison")
    with pytest.raises(TypeError, match="SparseGP: kernel Linear is not supported.*Matern52"):
        gb.SparseGP(t, y, likelihood="poisson", kernel=Linear(1))
    with pytest.raises(ValueError, match="n_inducing must be between 1 and n = 36, got 0"):
        gb.SparseGP(t, y, likelihood="poisson", n_inducing=0)
    bad = y.copy()
    bad[3] = -1.0
    with pytest.raises(ValueError):  # the Poisson's check_targets refuses a negative count
        gb.SparseGP(t, bad, likelihood="poisson", n_inducing=4, maxiter=4)


def test_predict_is_the_mixture_of_the_per_draw_latent_predictives(fitted):
    """f_mean and f_sd of ``gb.predict`` = moments of the equal mixture over all draws (max_draws above
    their number, so none is subsampled) of N(K_*u K_uu^-1 u_s, k_** - K_*u K_uu^-1 K_u*), u_s = L v_s,
    computed here from the kernel (jitter 1e-10, below the tolerance); y_mean = the draws' mean of the
    Poisson's E[exp(f_*)] = exp(m + s^2 / 2) per unit exposure (the log-normal mean)."""
    model, idata = fitted
    Xs = np.array([[1.0], [4.5], [9.0]])
    out = gb.predict(model, idata, Xs, y_new=[2, 0, 5], max_draws=1000)
    psi = psi_draws(idata).values.reshape(-1, 2)
    v = idata.posterior["v"].values.reshape(psi.shape[0], -1)
    Z, k, Xstd = model.target.Z, model.kernel, model.transform(Xs)
    means, variances = [], []
    for p, vs in zip(psi, v):
        Kuu = k(p, Z)
        L = np.linalg.cholesky(Kuu)
        A = np.linalg.solve(Kuu, k(p, Z, Xstd))  # K_uu^-1 K_u*
        means.append(A.T @ (L @ vs))
        variances.append(np.diag(k(p, Xstd)) - np.einsum("ij,ij->j", k(p, Z, Xstd), A))
    means, variances = np.array(means), np.array(variances)
    f_mean = means.mean(axis=0)
    f_sd = np.sqrt((variances + means**2).mean(axis=0) - f_mean**2)
    np.testing.assert_allclose(out["f_mean"].values, f_mean, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(out["f_sd"].values, f_sd, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(out["y_mean"].values, np.exp(means + variances / 2).mean(axis=0), rtol=1e-6)
    assert np.all(out["f_lower"].values < f_mean) and np.all(f_mean < out["f_upper"].values)
    assert out.attrs["lpd"] == pytest.approx(float(out["log_predictive_density"].sum()))


def test_the_classifier_is_the_sparse_gp_with_its_likelihood():
    """SparseGPClassifier is a SparseGP whose likelihood the labels choose: the same fit and target as
    SparseGP(..., likelihood=Probit()) on the labels as +-1."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    labels = X[:, 0] + 0.5 * rng.normal(size=30) > 0
    clf = gb.SparseGPClassifier(X, labels, n_inducing=4, maxiter=10)
    gen = gb.SparseGP(X, np.where(labels, 1.0, -1.0), likelihood="probit", n_inducing=4, maxiter=10)
    assert isinstance(clf, gb.SparseGP) and clf.classes == (False, True)
    assert np.array_equal(clf.target.Z, gen.target.Z)
    assert np.array_equal(clf.svgp_fit.params.psi, gen.svgp_fit.params.psi)


def test_the_docstring_example_runs():
    tests = [t for t in doctest.DocTestFinder().find(gb.SparseGP) if t.examples]
    assert tests
    for test in tests:
        result = doctest.DocTestRunner().run(test)
        assert result.failed == 0


def test_replicates_and_new_input_draws_are_the_likelihood_s_at_the_latent_predictive(fitted):
    """``gb.sample_posterior_predictive`` for a Poisson SparseGP: y_* ~ Poisson(exposure exp(f_*)),
    f_* from p(f_* | u = L v_s, theta_s).  Given the same draws, the replicates' mean over draws and
    points equals that of ``gb.predict``'s y_mean (exposure E[exp f_*]) at the training inputs within
    Monte Carlo error (a z-score from the replicates' own spread); unit exposure at X_new, as
    ``gb.predict``'s rate per unit exposure."""
    model, idata = fitted
    rep = gb.sample_posterior_predictive(model, idata, seed=4, extend=False)["y"].values  # (chain, draw, obs)
    assert rep.shape == (2, 15, model.n) and np.all(rep == np.round(rep)) and np.all(rep >= 0)
    want = 2.0 * gb.predict(model, idata, model.X_raw, max_draws=1000)["y_mean"].values
    per_draw = rep.reshape(-1, model.n).mean(axis=1)
    z = (per_draw.mean() - want.mean()) / (per_draw.std(ddof=1) / np.sqrt(per_draw.size))
    assert abs(z) < 4.0, z
    new = gb.sample_posterior_predictive(model, idata, X_new=[[1.0], [9.0]], seed=4, extend=False)["y"]
    assert new.dims == ("chain", "draw", "point") and new.shape == (2, 15, 2)
    again = gb.sample_posterior_predictive(model, idata, X_new=[[1.0], [9.0]], seed=4, extend=False)["y"]
    assert np.array_equal(new.values, again.values)
