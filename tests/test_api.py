"""The public API (gpbayes.api): models, methods by name, ArviZ results, predictions, and the docs' examples."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import gpbayes as gb
from gpbayes.classification import fit_ep_type2_ml, predictive_probabilities
from gpbayes.regression import fit_type2_ml

ROOT = Path(__file__).resolve().parents[1]
az = pytest.importorskip("arviz")


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


@pytest.mark.parametrize("doc", ["docs/user_guide.md", "README.md"])
def test_every_example_in_the_docs_runs(doc):
    blocks = python_blocks(ROOT / doc)
    if doc == "README.md":  # the README's library example (the other blocks are shell/config)
        blocks = [b for b in blocks if "import gpbayes as gb" in b]
    assert blocks, doc
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, f"{doc}:python-block", "exec"), namespace)


def test_models_are_not_estimators_old_names_warn_and_equality_is_identity():
    """Issue 25 item 3: the models' scikit-learn-style names are renamed (classes, ml_fit, svgp_fit), the old
    ones are read-only aliases that warn; == on a model (arrays in its fields) is identity and does not raise."""
    X, y = _regression(n=12, seed=5)
    clf = gb.GPClassifier(X, y > 0)
    assert clf.classes == (False, True)
    with pytest.warns(DeprecationWarning, match=r"GPClassifier.classes_ is deprecated; use .classes"):
        assert clf.classes_ == clf.classes
    with pytest.raises(AttributeError):
        clf.classes_ = (0, 1)
    twin = gb.GPClassifier(X, y > 0)
    assert clf == clf and clf != twin and len({clf, twin}) == 2  # no ValueError from array ==; hashable
    reg = gb.GPRegressor(X, y)
    assert reg == reg and reg != gb.GPRegressor(X, y) and not (reg == clf)
    sparse = gb.SparseGPClassifier(X, y > 0, n_inducing=3, maxiter=10)
    with pytest.warns(DeprecationWarning, match=r"SparseGPClassifier.classes_ is deprecated"):
        assert sparse.classes_ == sparse.classes == (False, True)
    with pytest.warns(DeprecationWarning, match=r"SparseGPClassifier.fit_ is deprecated; use .svgp_fit"):
        assert sparse.fit_ is sparse.svgp_fit
    assert sparse == sparse and sparse != clf


def _regression(n=30, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 2))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.standard_normal(n)
    return X, y


def test_labels_are_mapped_and_reported_or_refused():
    X = np.random.default_rng(0).normal(size=(6, 2))
    for y, classes in (([0, 1, 1, 0, 1, 0], (0, 1)), ([-1, 1, 1, -1.0, 1, -1], (-1, 1)),
                       (["b", "a", "a", "b", "a", "b"], ("a", "b")), ([True, False] * 3, (False, True))):
        m = gb.GPClassifier(X, y)
        assert m.classes == classes
        assert set(np.unique(m.y)) == {-1.0, 1.0}
    np.testing.assert_array_equal(gb.GPClassifier(X, ["b", "a"] * 3).y, [1, -1] * 3)
    with pytest.raises(ValueError, match="exactly two label values"):
        gb.GPClassifier(X, [0, 1, 2, 0, 1, 2])
    with pytest.raises(ValueError, match=r"\{-1, \+1\} or \{0, 1\}"):
        gb.GPClassifier(X, [1, 2, 1, 2, 1, 2])
    with pytest.raises(ValueError, match="non-finite"):
        gb.GPClassifier(np.where(np.eye(6, 2) > 0, np.inf, X), [0, 1] * 3)
    with pytest.raises(ValueError, match="one entry per row"):
        gb.GPClassifier(X, [0, 1, 0])


def test_a_method_that_does_not_apply_names_those_that_do():
    X, y = _regression()
    with pytest.raises(ValueError, match="choose one of .*'nuts'"):
        gb.sample(gb.GPRegressor(X, y), method="aa")
    with pytest.raises(ValueError, match="pseudo-marginal"):
        gb.sample(gb.GPClassifier(X, y > 0), method="nuts")


def test_point_estimate_and_predictions_match_the_library():
    """type2-ml is fit_type2_ml on the standardised data; its prediction is GPRegression.predict, unstandardised."""
    X, y = _regression()
    reg = gb.GPRegressor(X, y)
    idata = gb.sample(reg, method="type2-ml", seed=5, progress=False)
    ref = fit_type2_ml(reg.gp, np.random.default_rng(np.random.SeedSequence(5).spawn(1)[0]), n_restarts=3)
    np.testing.assert_array_equal(gb.api.psi_draws(idata).values[0, 0], ref.psi)
    Xn = np.array([[0.3, -0.2], [1.0, 1.0]])
    mean, var = reg.gp.predict(ref.psi, (Xn - reg.x_shift) / reg.x_scale)
    pred = gb.predict(reg, idata, Xn)
    np.testing.assert_allclose(pred["mean"].values, mean * reg.y_scale + reg.y_shift, rtol=1e-12)
    np.testing.assert_allclose(pred["sd_f"].values, np.sqrt(var) * reg.y_scale, rtol=1e-10)
    # classification: EP-ML's predictive is F&G eq. 8 at the EP type-II ML estimate
    clf = gb.GPClassifier(X, y > 0)
    idata = gb.sample(clf, method="ep-ml", seed=6, progress=False)
    psi = gb.api.psi_draws(idata).values[0, 0]
    ref = fit_ep_type2_ml(clf.X, clf.y, clf.kernel, np.random.default_rng(np.random.SeedSequence(6).spawn(1)[0]))
    np.testing.assert_array_equal(psi, ref.psi)
    p = gb.predict(clf, idata, Xn)["probability"].values
    np.testing.assert_allclose(p, predictive_probabilities(clf.X, clf.y, clf.transform(Xn), clf.kernel, psi),
                               atol=1e-6)


def test_nuts_posterior_mean_matches_a_long_reference_chain_of_another_sampler():
    """Two different samplers (NUTS, slice) on the exact marginal agree within Monte Carlo error."""
    X, y = _regression(n=25, seed=1)
    reg = gb.GPRegressor(X, y, ard=False)
    a = gb.sample(reg, method="nuts", chains=2, draws=400, n_warmup=200, seed=1, progress=False)
    b = gb.sample(reg, method="slice", chains=2, draws=800, n_warmup=100, seed=2, progress=False)
    for v in ("tau", "noise_variance"):
        sa, sb = az.summary(a), az.summary(b)
        assert sa is not None and sb is not None
    pa, pb = gb.api.psi_draws(a).values.reshape(-1, 3), gb.api.psi_draws(b).values.reshape(-1, 3)
    ess_a = az.ess(gb.io.group(a, "unconstrained_posterior")).to_array().values
    ess_b = az.ess(gb.io.group(b, "unconstrained_posterior")).to_array().values
    se = np.sqrt(pa.var(axis=0) / ess_a + pb.var(axis=0) / ess_b)
    assert np.all(np.abs(pa.mean(axis=0) - pb.mean(axis=0)) < 4 * se), (pa.mean(axis=0), pb.mean(axis=0), se)


def test_same_seed_same_result_and_chains_are_independent_streams():
    X, y = _regression()
    clf = gb.GPClassifier(X, y > 0)
    a = gb.sample(clf, method="aa", chains=2, draws=20, n_warmup=10, seed=3, progress=False)
    b = gb.sample(clf, method="aa", chains=2, draws=20, n_warmup=10, seed=3, progress=False)
    c = gb.sample(clf, method="aa", chains=3, draws=20, n_warmup=10, seed=3, progress=False)
    np.testing.assert_array_equal(gb.api.psi_draws(a).values, gb.api.psi_draws(b).values)
    # adding a chain does not change the others
    np.testing.assert_array_equal(gb.api.psi_draws(a).values, gb.api.psi_draws(c).values[:2])
    assert not np.array_equal(gb.api.psi_draws(a).values[0], gb.api.psi_draws(a).values[1])
    assert {"lp", "n_cubic", "wall_time"} <= set(a.sample_stats.data_vars)
    assert a.posterior.attrs["method"] == "aa" and a.posterior.attrs["seed"] == 3


def test_weighted_methods_return_weights_and_a_resampled_posterior(tmp_path):
    X, y = _regression()
    idata = gb.sample(gb.GPRegressor(X, y), method="amis", n_iterations=4, n_per_iteration=20, seed=1,
                      progress=False, n_resample=50)
    w = idata.sample_stats["weight"].values
    assert w.shape == (1, 80) and np.isclose(w.sum(), 1.0) and np.all(w >= 0)
    assert idata.posterior["lengthscale"].shape == (1, 50, 2) and "posterior_resampled" not in gb.io.group_names(idata)
    table = gb.summary(idata)
    assert 1.0 <= table["ess_importance"].iloc[0] <= 80
    idata.to_netcdf(tmp_path / "amis.nc")
    again = az.from_netcdf(tmp_path / "amis.nc")
    np.testing.assert_array_equal(again.sample_stats["weight"].values, w)


def test_api_reference_is_generated_from_the_current_docstrings():
    import subprocess
    import sys

    res = subprocess.run([sys.executable, str(ROOT / "tools/api_reference.py"), "--check"], capture_output=True,
                         text=True)
    assert res.returncode == 0, res.stderr


def test_every_public_name_has_a_docstring_citing_what_it_implements():
    for name in gb.__all__:
        obj = getattr(gb, name)
        doc = obj.__doc__ or ""
        assert len(doc.strip()) > 20, name
        if name in ("GPRegressor", "GPClassifier", "PoissonGP", "SparseGPClassifier", "predict", "summary"):
            assert re.search(r"\b(eqs?\.|Alg\.|Sec\.|Table [IVX0-9]|poster,)", doc), name


def test_unknown_options_are_refused_with_the_method_s_options():
    X, y = _regression()
    with pytest.raises(ValueError, match=r"no option\(s\) \['n_imps'\].*'n_imp'"):
        gb.sample(gb.GPClassifier(X, y > 0), method="pseudo-marginal", n_imps=4)
    with pytest.raises(ValueError, match="'max_tree_depth'"):
        gb.sample(gb.GPRegressor(X, y), method="nuts", step=0.1)
    with pytest.raises(ValueError, match=r"no option\(s\) \['representation'\]"):  # an alias fixes it
        gb.sample(gb.GPClassifier(X, y > 0), method="aa", representation="surr")


def test_until_converged_stops_early_with_the_same_draws_a_fixed_length_run_gives():
    X, y = _regression(n=25, seed=1)
    reg = gb.GPRegressor(X, y, ard=False)
    rule = {"rhat": 1.05, "ess_bulk": 100, "check_every": 50, "max_draws": 3000}
    idata = gb.sample(reg, method="slice", chains=2, draws=3000, n_warmup=50, seed=4, progress=False,
                      until_converged=rule)
    n = idata.posterior.sizes["draw"]
    assert idata.sample_stats.attrs["stopped"] == "converged" and n < 3000 and n % 50 == 0
    fixed = gb.sample(reg, method="slice", chains=2, draws=n, n_warmup=50, seed=4, progress=False)
    np.testing.assert_array_equal(gb.api.psi_draws(idata).values, gb.api.psi_draws(fixed).values)
    summary = az.summary(gb.io.group(idata, "unconstrained_posterior"))
    assert summary["r_hat"].max() < 1.05 + 1e-9 and summary["ess_bulk"].min() > 100
    with pytest.raises(ValueError, match="no key"):
        gb.sample(reg, method="slice", until_converged={"r_hat": 1.01})
    with pytest.raises(ValueError, match="until_converged is available"):
        gb.sample(reg, method="amis", until_converged=True)


def test_gplvm_model_chains_and_ml_predictive_match_the_library():
    from gpbayes.gplvm import pseudo_marginal as gpm

    rng = np.random.default_rng(0)
    x = np.linspace(0.0, 4 * np.pi, 20)
    Y = np.column_stack([np.cos(x), np.sin(x)]) + 0.05 * rng.standard_normal((20, 2))
    m = gb.GPLVMRegressor(x, Y, n_inducing=8, ml_restarts=1, ml_max_iter=100)
    assert m.param_names == ["sigma_0", "theta_0", "theta_1", "theta_S", "beta"]
    with pytest.warns(DeprecationWarning, match=r"GPLVMRegressor.fit_ is deprecated; use .ml_fit"):
        assert m.fit_ is m.ml_fit
    assert m == m
    ml = gb.sample(m, method="type2-ml", progress=False)
    np.testing.assert_array_equal(gb.api.psi_draws(ml).values[0, 0], m.ml_fit.psi)
    pred = gb.predict(m, ml, x[:3], max_draws=50, seed=2)
    mix = gpm.ml_predictive_mixture(np.random.default_rng(2), m.gplvm, m.ml_fit.psi, m.ml_fit.params,
                                    m.transform(x[:3]), n_samples=50)
    np.testing.assert_allclose(pred["mean"].values, mix.mean.mean(axis=0) * m.y_scale + m.y_shift, rtol=1e-12)
    idata = gb.sample(m, method="pm-within-gibbs", chains=2, draws=4, n_warmup=2, seed=1, progress=False, n_imp=3,
                      vb_max_iter=5)
    assert idata.posterior["Z"].shape == (2, 4, 20, 2)
    assert {"n_cubic", "n_jitter", "n_not_converged"} <= set(idata.sample_stats.data_vars)
    with pytest.raises(ValueError, match="n_inducing"):
        gb.GPLVMRegressor(x, Y, n_inducing=50)


def test_logistic_classifier_methods_and_predictions():
    from scipy.special import expit

    from gpbayes.approx.laplace import laplace_approximation

    X, y = _regression(n=30, seed=3)
    clf = gb.GPClassifier(X, y > 0, likelihood="logistic")
    assert "ep-ml" not in gb.methods(clf) and "aa" in gb.methods(clf)
    with pytest.raises(ValueError, match="EP is implemented for the probit"):
        gb.sample(clf, method="pseudo-marginal", approximation="ep", progress=False)
    idata = gb.sample(clf, method="pseudo-marginal", n_imp=8, chains=2, draws=20, n_warmup=20, seed=1, progress=False)
    assert idata.posterior.attrs["likelihood"] == "logistic"
    # the predictive at one draw against brute force: Laplace latent predictive by dense algebra, E[sigmoid] by MC
    psi = gb.api.psi_draws(idata).values[0, -1]
    one = gb.io.make_idata({g: gb.io.group(idata, g).isel(chain=[0], draw=[-1])
                            for g in ("posterior", "unconstrained_posterior")})
    Xn = np.array([[0.2, -0.4], [1.5, 1.0]])
    p = gb.predict(clf, one, Xn)["probability"].values
    K = clf.kernel(psi, clf.X)
    a = laplace_approximation(K, clf.y, clf.likelihood)
    Ks, kss = clf.kernel(psi, clf.X, clf.transform(Xn)), clf.kernel.diag(psi, clf.transform(Xn))
    mean = Ks.T @ np.linalg.solve(K, a.m)  # R&W eq. 3.21
    var = kss - np.einsum("ij,ij->j", Ks, np.linalg.solve(K + np.diag(1.0 / a.w), Ks))  # R&W eq. 3.24
    f = mean + np.sqrt(var) * np.random.default_rng(0).standard_normal((200_000, 2))
    np.testing.assert_allclose(p, expit(f).mean(axis=0), atol=3e-3)


def test_sparse_multiclass_uses_robust_max_and_predicts_class_probabilities():
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    idx = np.random.default_rng(0).permutation(150)
    labels = np.array(["setosa", "versicolor", "virginica"])[y]
    with pytest.warns(UserWarning, match=r"labels mapped: classes \['setosa', 'versicolor', 'virginica'\] -> 0..2"):
        m = gb.SparseGPClassifier(X[idx[:90]], labels[idx[:90]], n_inducing=5)
    assert m.classes == ("setosa", "versicolor", "virginica") and m.likelihood.n_classes == 3
    idata = gb.sample(m, method="joint-hmc", chains=2, draws=15, n_warmup=15, seed=1, progress=False)
    p = gb.predict(m, idata, X[idx[90:]])["probability"]
    assert p.dims == ("point", "class") and list(p["class"].values) == list(m.classes)
    np.testing.assert_allclose(p.values.sum(axis=1), 1.0, atol=1e-9)
    assert np.mean(p.values.argmax(axis=1) == y[idx[90:]]) > 0.8  # iris is easy; chance is 1/3
