"""Every method's result follows the ArviZ InferenceData schema and works with ArviZ as it stands.

For each method of ``gb.sample`` on every model (tiny sizes): only schema
groups; X in ``constant_data`` and y in ``observed_data`` sharing the dim
``obs``; one natural-scale variable per hyperparameter in ``posterior`` (the
per-input ones, ``lengthscale``, over ``feature``) and its log in
``unconstrained_posterior`` (so ``az.summary`` has one row per hyperparameter,
``lengthscale[0]``, ...); named dims everywhere (no ``<var>_dim_<i>``); then
``az.summary``, ``az.plot_trace``, ``az.plot_posterior`` and an
``az.from_netcdf`` round trip.
"""

from __future__ import annotations
import functools

import warnings

import numpy as np
import pytest

import gpbayes as gb

az = pytest.importorskip("arviz")
matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def _standardized(cls):
    """The model class with ``units="standardized"``: these tests pin the prior-by-name and layout mechanics
    on the model's own scale (posterior = exp(unconstrained_posterior)); the data's units: tests/test_units.py."""
    return functools.partial(cls, units="standardized")


SCHEMA = set(__import__("arviz").data.inference_data.SUPPORTED_GROUPS_ALL)


def _xy(n=14, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, d))
    return X, np.sin(2 * X[:, 0]) + 0.2 * rng.standard_normal(n)


def _models():
    X, y = _xy()
    reg = _standardized(gb.GPRegressor)(X, y)
    clf = _standardized(gb.GPClassifier)(X, y > 0)
    cox = _standardized(gb.PoissonGP)(X[:, :1], np.random.default_rng(1).poisson(2.0, size=14))
    return {"reg": reg, "clf": clf, "cox": cox}


_MODELS = {}


def model(name):
    if not _MODELS:
        _MODELS.update(_models())
    if name == "sparse" and name not in _MODELS:
        X, y = _xy(n=20)
        _MODELS[name] = _standardized(gb.SparseGPClassifier)(X, y > 0, n_inducing=4, maxiter=20)
    if name == "gplvm" and name not in _MODELS:
        x = np.linspace(0.0, 6.0, 12)
        Y = np.column_stack([np.cos(x), np.sin(x)]) + 0.05 * np.random.default_rng(0).standard_normal((12, 2))
        _MODELS[name] = gb.GPLVMRegressor(x, Y, n_inducing=5, ml_restarts=1, ml_max_iter=30)
    return _MODELS[name]


SMALL_AMIS = {"amis": dict(n_iterations=3, n_per_iteration=15, n_resample=40),
              "mamis": dict(n_iterations=3, slope=5, n_resample=40),
              "amis-mamis": dict(n_tuning_samples=30, n_per_iteration_amis=15, n_iterations=2, slope=5,
                                 n_resample=40),
              "pm-amis": dict(n_imp=4, n_iterations=2, n_per_iteration=10, n_resample=40)}
CASES = ([("reg", m) for m in ("rwmh", "hmc", "nuts", "slice", "amis", "mamis", "amis-mamis", "type2-ml")]
         + [("clf", m) for m in ("pseudo-marginal", "pm-amis", "aa", "surr", "slice-surr-site", "slice-fixed",
                                 "slice-prior-white", "slice-surr-taylor", "slice-post-site", "slice-post-taylor",
                                 "ep-ml", "aa-keep-latent")]
         + [("cox", m) for m in ("pseudo-marginal", "aa", "slice-post-taylor")]
         + [("sparse", m) for m in ("joint-hmc", "gibbs")]
         + [("gplvm", m) for m in ("pm-within-gibbs", "type2-ml")])


def _run(name, method):
    m = model(name)
    opts = dict(SMALL_AMIS.get(method, {}))
    if method == "aa-keep-latent":
        method, opts["keep_latent"] = "aa", True
    if method == "pseudo-marginal":
        opts["n_imp"] = 4
    if method == "pm-within-gibbs":
        opts.update(n_imp=3, vb_max_iter=3)
    point = method in ("type2-ml", "ep-ml")
    return m, gb.sample(m, method=method, chains=1 if point else 2, draws=6, warmup=4, seed=1, progress=False,
                        **opts)


@pytest.mark.parametrize("name,method", CASES, ids=[f"{a}-{b}" for a, b in CASES])
def test_every_method_s_result_is_on_the_arviz_schema(name, method, tmp_path):
    m, idata = _run(name, method)
    groups = set(idata.groups())
    assert groups <= SCHEMA, groups - SCHEMA
    assert {"posterior", "unconstrained_posterior", "sample_stats", "observed_data", "constant_data"} <= groups
    # data: X rows and y share the dim obs
    assert idata.constant_data["X"].dims == ("obs", "feature")
    assert idata.observed_data["y"].dims[0] == "obs"
    assert idata.constant_data.sizes["obs"] == idata.observed_data.sizes["obs"] == m.n
    # one natural-scale variable per hyperparameter (per-input ones over a dim); the log scale under the same
    # names elsewhere
    names = m.hyperparameter_names
    assert gb.api.hyperparameter_names(idata) == names
    for h in m.hyperparameters:
        assert idata.posterior[h.name].dims == ("chain", "draw") + (() if h.dim is None else (h.dim,))
        if h.dim is not None:
            assert list(idata.posterior[h.dim].values) == list(h.coords)
        np.testing.assert_array_equal(idata.posterior[h.name].values,
                                      np.exp(idata.unconstrained_posterior[h.name].values))
    assert "psi" not in idata.posterior
    for g in idata.groups():
        for v, da in idata[g].data_vars.items():
            assert not any("_dim_" in d for d in da.dims), (g, v, da.dims)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # one-chain / few-draw shape warnings
        table = az.summary(idata)
    hyper_rows = [r for r in table.index if r in m.hyperparameter_labels]
    # each hyperparameter once, lengthscale[0].. per input (latent draws f, v, Z add their own rows)
    assert hyper_rows == m.hyperparameter_labels
    if method not in ("type2-ml", "ep-ml"):
        ax = az.plot_trace(idata, var_names=names)
        assert ax.shape[0] == len(names)  # one panel row per hyperparameter
        az.plot_posterior(idata, var_names=names)
        plt.close("all")
    if name == "reg" or (name == "clf" and "f" in idata.posterior):  # a pointwise log-likelihood applies
        gb.compute_log_likelihood(m, idata)
        gb.sample_posterior_predictive(m, idata, seed=2)
        assert idata.log_likelihood["y"].dims == idata.posterior_predictive["y"].dims == ("chain", "draw", "obs")
        if method not in ("type2-ml", "ep-ml"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # Pareto k warnings at a dozen draws
                assert np.isfinite(az.loo(idata).elpd_loo)
        groups = set(idata.groups())
    path = tmp_path / "r.nc"
    idata.to_netcdf(path)
    again = az.from_netcdf(path)
    assert set(again.groups()) == groups
    np.testing.assert_array_equal(gb.api.psi_draws(again).values, gb.api.psi_draws(idata).values)
    for v in idata.sample_stats.data_vars:
        np.testing.assert_array_equal(again.sample_stats[v].values, idata.sample_stats[v].values)


def test_importance_sampling_posterior_is_resampled_and_the_weighted_sample_is_kept():
    """az.summary on posterior = the weighted estimate (within the resampling error); the draws are the weighted
    sample's, picked by resample_index."""
    m, idata = _run("reg", "amis")
    ss = idata.sample_stats
    w = ss["weight"].values[0]
    psi_w = ss["importance_psi"].values[0]
    assert ss["importance_psi"].dims == ("chain", "importance_sample", "param")
    np.testing.assert_allclose(w.sum(), 1.0)
    np.testing.assert_allclose(w, np.exp(ss["log_weight"].values[0] - np.logaddexp.reduce(ss["log_weight"].values[0])))
    idx = ss["resample_index"].values[0]
    np.testing.assert_array_equal(gb.api.psi_draws(idata).values[0], psi_w[idx])
    big = gb.sample(m, method="amis", n_iterations=3, n_per_iteration=15, n_resample=20000, seed=1, progress=False)
    weighted_mean = np.exp(big.sample_stats["importance_psi"].values[0]).T @ big.sample_stats["weight"].values[0]
    resampled_mean = az.summary(big, kind="stats", round_to="none")["mean"].values
    sd = np.sqrt(np.exp(2 * big.sample_stats["importance_psi"].values[0]).T @ big.sample_stats["weight"].values[0]
                 - weighted_mean**2)
    assert np.all(np.abs(resampled_mean - weighted_mean) < 5 * sd / np.sqrt(20000) + 1e-12)


def test_tuned_step_size_is_per_draw_in_sample_stats_for_every_chain():
    _, idata = _run("reg", "nuts")
    step = idata.sample_stats["step_size"]
    assert step.dims == ("chain", "draw")
    assert np.all(step.values == step.values[:, :1]) and step.values[0, 0] != step.values[1, 0]
    assert not any(a.startswith(("tuned_", "warmup_")) for a in idata.sample_stats.attrs)
    assert idata.sample_stats["warmup_n_cubic"].dims == ("chain",)


def test_hyperparameters_are_named_after_a_table_s_columns(tmp_path):
    """Anything with .columns (a pandas DataFrame) names the lengthscales; the library does not import pandas."""

    class Table:  # the duck type the models read: columns + an array
        def __init__(self, a, columns):
            self._a, self.columns = np.asarray(a), list(columns)

        def __array__(self, dtype=None, copy=None):
            return self._a if dtype is None else self._a.astype(dtype)

    X, y = _xy()
    m = _standardized(gb.GPRegressor)(Table(X, ["age", "bmi"]), y)
    assert m.hyperparameter_names == ["lengthscale", "signal_variance", "noise_variance"]
    assert m.hyperparameter_labels == ["lengthscale[age]", "lengthscale[bmi]", "signal_variance", "noise_variance"]
    idata = gb.sample(m, method="type2-ml", progress=False)
    assert list(idata.posterior.data_vars) == ["lengthscale", "signal_variance", "noise_variance"]
    assert list(idata.posterior["lengthscale"].coords["feature"].values) == ["age", "bmi"]
    assert list(idata.constant_data["feature"].values) == ["age", "bmi"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # one draw
        assert list(az.summary(idata, kind="stats").index) == m.hyperparameter_labels
    idata.to_netcdf(tmp_path / "named.nc")
    again = az.from_netcdf(tmp_path / "named.nc")
    assert list(again.constant_data["feature"].values) == ["age", "bmi"]
    assert list(again.posterior.data_vars) == ["lengthscale", "signal_variance", "noise_variance"]
    assert list(again.posterior["feature"].values) == ["age", "bmi"]
    assert _standardized(gb.GPRegressor)(Table(X, ["age", "bmi"]), y, ard=False).hyperparameter_names == [
        "lengthscale", "signal_variance", "noise_variance"]
    pd = pytest.importorskip("pandas")
    assert _standardized(gb.GPClassifier)(pd.DataFrame(X, columns=["a", "b"]), y > 0).hyperparameter_labels == [
        "lengthscale[a]", "lengthscale[b]", "signal_variance"]


def _with_old_names(model, idata):
    """``idata`` as an earlier gpbayes wrote it: one scalar variable per coordinate of psi, named ``tau_0``/``sigma``."""
    import arviz

    groups = {}
    for g in ("posterior", "unconstrained_posterior"):
        stacked = gb.api.stack_hyperparameters(idata[g][model.hyperparameter_names])
        groups[g] = stacked.to_dataset("param").rename(dict(zip(model.hyperparameter_labels, model._legacy_names())))
    return arviz.InferenceData(**groups)


def test_a_result_with_the_names_of_before_is_read_the_same_with_a_deprecation_warning():
    """gb.predict / compute_log_likelihood read psi in its order: an idata saved under tau_0, sigma, noise_variance
    gives the same numbers bit for bit, and says which names it now has; one of another model stops."""
    X, y = _xy()
    m = _standardized(gb.GPRegressor)(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gb.NotConvergedWarning)
        idata = gb.sample(m, method="rwmh", chains=1, draws=20, n_warmup=10, seed=3, progress=False)
    old = _with_old_names(m, idata)
    assert list(old.posterior.data_vars) == ["tau_0", "tau_1", "sigma", "noise_variance"]
    np.testing.assert_array_equal(gb.api.psi_draws(old).values, gb.api.psi_draws(idata).values)
    new = gb.predict(m, idata, X[:4], y_new=y[:4])
    with pytest.warns(DeprecationWarning, match=r"earlier gpbayes \(\['tau_0', 'tau_1', 'sigma'\]\); read in psi's "
                                                r"order as \['lengthscale\[0\]', 'lengthscale\[1\]', 'signal_variance'\]"):
        again = gb.predict(m, old, X[:4], y_new=y[:4])
    for v in new.data_vars:
        np.testing.assert_array_equal(again[v].values, new[v].values)
    with pytest.warns(DeprecationWarning, match="gb.compute_log_likelihood: idata has the hyperparameter names"):
        gb.compute_log_likelihood(m, old)
    with pytest.raises(ValueError, match=r"not the one the result was sampled from -- hyperparameters: the result.s "):
        gb.predict(_standardized(gb.GPRegressor)(X, y, ard=False), idata, X[:4])


def test_a_kernel_on_some_columns_has_its_own_dim_and_psi_comes_back_in_order():
    """A product whose SE factor acts on column 1 only: its lengthscale over ``se_lengthscale_feature`` (column 1),
    the linear factor's variances over ``feature``; ``psi_draws`` gives psi's columns in order, exactly."""
    from gpbayes.kernels import Linear, SquaredExponential

    X, y = _xy(d=3)
    m = _standardized(gb.GPRegressor)(X, y, kernel=SquaredExponential(ard=True, active_dims=(1,)) * Linear(3, ard=True))
    assert m.hyperparameter_labels == ["se_lengthscale[1]", "se_signal_variance", "linear_variance[0]",
                                       "linear_variance[1]", "linear_variance[2]", "noise_variance"]
    assert [h.dim for h in m.hyperparameters] == ["se_lengthscale_feature", None, "feature", None]
    psi = np.random.default_rng(0).normal(size=(2, 3, 6))
    groups = gb.methods.base._hyperparameter_groups(m, psi, {})
    assert groups["posterior"]["se_lengthscale"].dims == ("chain", "draw", "se_lengthscale_feature")
    back = gb.api.stack_hyperparameters(groups["unconstrained_posterior"])
    np.testing.assert_array_equal(back.values, psi)
    assert list(back["param"].values) == m.hyperparameter_labels
    np.testing.assert_array_equal(gb.api.stack_hyperparameters(groups["posterior"]).values, np.exp(psi))
