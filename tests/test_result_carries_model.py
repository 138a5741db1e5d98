"""A result that carries its model (issue 41, point 3; ``gpbayes.model_spec``).

For every model kind a small fit is saved with ``to_netcdf``; a NEW process reads it with ``az.from_netcdf``
and calls ``gb.predict(idata, X_new)`` (and ``gb.sample_posterior_predictive(idata, X_new=...)``) with no
model rebuilt; its numbers equal the in-memory ``gb.predict(model, idata, X_new)`` to 1e-12 (the same seed).
A model given that is not the one sampled is refused, naming the difference; a DataFrame X_new is matched by
column name; a kernel of the user's own class saves, and predicting without the model names it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import gpbayes as gb
from gpbayes import io
from gpbayes.kernels import SquaredExponential

az = pytest.importorskip("arviz")
pd = pytest.importorskip("pandas")

pytestmark = pytest.mark.filterwarnings("ignore")

RNG = np.random.default_rng(41)
X = RNG.uniform(-2.0, 2.0, size=(12, 2))
F = np.sin(X[:, 0]) + 0.5 * X[:, 1]
X_NEW = RNG.uniform(-2.0, 2.0, size=(4, 2))
COLUMNS = ["age", "bmi"]
SHORT = {"chains": 1, "draws": 10, "n_warmup": 5}
KINDS = ["GPRegressor", "GPClassifier", "GPClassifier-logistic", "PoissonGP", "LatentGP", "SparseGP",
         "SparseGPClassifier", "GPLVMRegressor", "GPLVMRegressor-Z"]


def _models() -> dict:
    """name -> (model, sample options): every model kind, tiny n, the fastest methods."""
    counts = RNG.poisson(np.exp(F))
    labels3 = np.digitize(F, [-0.5, 0.5])  # three classes: robust-max
    frame = pd.DataFrame(X, columns=COLUMNS)
    gplvm = gb.GPLVMRegressor(X, np.column_stack([F, F**2]), latent_dim=1, n_inducing=4, ml_restarts=0, ml_max_iter=30)
    return {
        "GPRegressor": (gb.GPRegressor(frame, 3.0 + F + 0.1 * RNG.standard_normal(12), mean=gb.means.Constant()),
                        {"method": "rwmh", "chains": 1, "draws": 20, "n_warmup": 10}),
        "GPClassifier": (gb.GPClassifier(X, np.where(F > 0, "yes", "no")), {"method": "ep-ml", "chains": 1}),
        "GPClassifier-logistic": (gb.GPClassifier(X, F > 0, likelihood="logistic"),
                                  {"method": "aa", "keep_latent": True, **SHORT}),
        "PoissonGP": (gb.PoissonGP(X, counts, exposure=np.linspace(0.5, 2.0, 12)),
                      {"method": "slice-surr-site", "keep_latent": True, **SHORT}),
        "LatentGP": (gb.LatentGP(X, counts, likelihood="poisson", sample_offset=True), {"method": "aa", **SHORT}),
        "SparseGP": (gb.SparseGP(X, counts, likelihood=gb.likelihoods.Poisson(), n_inducing=4, maxiter=20),
                     {"method": "joint-hmc", "chains": 1, "draws": 10, "n_warmup": 10}),
        "SparseGPClassifier": (gb.SparseGPClassifier(X, labels3, n_inducing=4, maxiter=20),
                               {"method": "joint-hmc", "chains": 1, "draws": 10, "n_warmup": 10}),
        "GPLVMRegressor": (gplvm, {"method": "type2-ml", "chains": 1}),  # predicts from q(Z) of the ML fit
        "GPLVMRegressor-Z": (gplvm, {"method": "joint-gibbs", **SHORT}),  # from the kept draws of Z
    }


#: the new process: every saved result read back and predicted from without its model
CHILD = textwrap.dedent("""
    import json, sys, warnings
    import numpy as np, pandas as pd, arviz as az
    import gpbayes as gb
    warnings.simplefilter("ignore")
    jobs = json.loads(sys.argv[1])
    out = {}
    for name, job in jobs.items():
        idata = az.from_netcdf(job["path"])
        X_new = np.asarray(job["X_new"])
        if job["columns"]:  # the training columns, given in reverse order: matched by name
            X_new = pd.DataFrame(X_new, columns=job["columns"])[job["columns"][::-1]]
        pred = gb.predict(idata, X_new, seed=0)
        for var in pred.data_vars:
            out[f"{name}/predict/{var}"] = pred[var].values
        if job["draws"]:  # a result that keeps what draws of y need (not "ep-ml"'s point estimate)
            draws = gb.sample_posterior_predictive(idata, X_new=X_new, seed=5, extend=False)
            out[f"{name}/draws"] = draws["y"].values
    np.savez(job["out"], **out)
""")


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Every model sampled, saved, and predicted from in memory and, without the model, in a new process."""
    tmp = tmp_path_factory.mktemp("results")
    jobs, expected = {}, {}
    for name, (model, options) in _models().items():
        idata = gb.sample(model, seed=1, progress=False, **options)
        path = tmp / f"{name}.nc"
        idata.to_netcdf(str(path))
        columns = getattr(model, "feature_names", None)
        X_new = pd.DataFrame(X_NEW, columns=columns) if columns else X_NEW
        pred = gb.predict(model, idata, X_new, seed=0)
        expected[name] = {f"{name}/predict/{v}": pred[v].values for v in pred.data_vars}
        draws = options.get("method") != "ep-ml"
        if draws:
            expected[name][f"{name}/draws"] = gb.sample_posterior_predictive(model, idata, X_new=X_new, seed=5,
                                                                             extend=False)["y"].values
        jobs[name] = {"path": str(path), "X_new": X_NEW.tolist(), "columns": columns, "draws": draws,
                      "out": str(tmp / "new.npz")}
    src = str(Path(gb.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]),
           "OPENBLAS_NUM_THREADS": "1"}
    res = subprocess.run([sys.executable, "-c", CHILD, json.dumps(jobs)], capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    with np.load(tmp / "new.npz") as npz:
        got = {k: npz[k] for k in npz.files}
    return tmp, expected, got


@pytest.mark.parametrize("name", KINDS)
def test_a_new_process_predicts_from_the_saved_result_alone_as_the_model_does(saved, name):
    _, expected, got = saved
    want = expected[name]
    assert want and set(want) <= set(got), sorted(set(want) - set(got))
    for key, value in want.items():
        np.testing.assert_allclose(got[key], value, rtol=0, atol=1e-12, err_msg=key)


def test_the_spec_is_versioned_json_of_str_and_number_attributes(saved):
    tmp, _, _ = saved
    again = az.from_netcdf(str(tmp / "SparseGP.nc"))
    spec = json.loads(again.attrs["gpbayes_model"])
    assert spec["spec_version"] == gb.model_spec.SPEC_VERSION and spec["model"] == "SparseGP"
    assert spec["kernel"]["class"] == "kernels.SquaredExponential"
    assert spec["likelihood"] == {"class": "likelihoods.Poisson", "args": spec["likelihood"]["args"]}
    assert {"svgp_Z", "svgp_m", "svgp_R", "svgp_psi"} <= set(io.group(again, "constant_data").data_vars)
    for value in again.attrs.values():
        assert isinstance(value, (str, int, float, np.integer, np.floating)), type(value)


def _components():
    from gpbayes import kernels as k, likelihoods as lik, means, priors as p
    from gpbayes.sparse.multiclass import RobustMax

    return [k.SquaredExponential(3, ard=True, parameterisation="ma", nugget=1e-6),
            k.SquaredExponential(active_dims=(0, 2)), k.Matern12(2), k.Matern32(2, ard=True), k.Matern52(1),
            k.RationalQuadratic(2), k.Periodic(1), k.Linear(2, ard=True), k.White(2),
            (k.Matern52(2) * k.Linear(2)) + k.White(2), lik.Probit(), lik.Logistic(), lik.Gaussian(0.3, 1.0),
            lik.Poisson(exposure=np.array([1.0, 2.0]), offset=0.1), RobustMax(3, 0.01), means.Constant(0.0, 2.0),
            means.Linear(prior_sd=np.array([1.0, 2.0, 3.0])),
            p.IndependentPrior((p.Gamma(1.0, 0.5), p.InverseGamma(1.0, 0.01), p.LogNormal(0.0, 1.0),
                                p.Uniform(0.0, 1.0), p.LogUniform(0.1, 10.0), p.HalfNormal(1.0), p.Exponential(1.0),
                                p.HalfCauchy(1.0)))]


@pytest.mark.parametrize("component", _components(), ids=lambda c: type(c).__name__)
def test_every_library_component_reads_back_from_its_json_spec(component):
    text = json.dumps(gb.model_spec.component_spec(component))
    again = gb.model_spec.component_from_spec(json.loads(text))
    assert type(again) is type(component) and repr(again) == repr(component)
    assert json.dumps(gb.model_spec.component_spec(again)) == text


def _sampled(model, **options):
    return gb.sample(model, seed=2, progress=False, **{"method": "rwmh", "chains": 1, "draws": 6, "n_warmup": 4,
                                                       **options})


def test_a_model_that_is_not_the_sampled_one_is_refused_naming_the_difference():
    x1 = X[:, :1]
    reg = gb.GPRegressor(x1, F)  # lengthscale, signal_variance, noise_variance: 3 hyperparameters
    idata = _sampled(reg)
    clf = gb.GPClassifier(X, F > 0)  # lengthscale[0], lengthscale[1], signal_variance: 3 as well
    with pytest.raises(ValueError, match=r"model class: the result's \"GPRegressor\", the model's \"GPClassifier\""):
        gb.predict(clf, idata, X_NEW)
    with pytest.raises(ValueError, match=r"training data \(hash of X, y\)"):
        gb.predict(gb.GPRegressor(x1, F + 1.0), idata, X_NEW[:, :1])
    with pytest.raises(ValueError, match=r"kernel"):
        gb.sample_posterior_predictive(gb.GPRegressor(x1, F, kernel=gb.kernels.Matern52(1)), idata)
    lat = gb.LatentGP(X, RNG.poisson(np.exp(F)), likelihood="poisson")
    lat_idata = gb.sample(lat, method="aa", seed=2, progress=False, **SHORT)
    other = gb.LatentGP(X[:10], RNG.poisson(np.exp(F[:10])), likelihood="poisson")
    with pytest.raises(ValueError, match=r"n \(training rows\): the result's 12, the model's 10"):
        gb.predict(other, lat_idata, X_NEW)
    with pytest.raises(ValueError, match=r"likelihood"):
        gb.compute_log_likelihood(gb.LatentGP(X, lat.y, likelihood="gaussian"), lat_idata)
    # the model it was sampled from, in either argument order of before and after
    a = gb.predict(reg, idata, X_NEW[:, :1])
    b = gb.predict(idata, X_NEW[:, :1])
    c = gb.predict(model=reg, idata=idata, X_new=X_NEW[:, :1])
    d = gb.predict(idata, X_new=X_NEW[:, :1])
    for other_result in (b, c, d):
        np.testing.assert_array_equal(a["mean"].values, other_result["mean"].values)


def test_a_dataframe_x_new_is_matched_by_column_name():
    frame = pd.DataFrame(X, columns=COLUMNS)
    model = gb.GPRegressor(frame, F)
    idata = _sampled(model)
    right = gb.predict(idata, pd.DataFrame(X_NEW, columns=COLUMNS))
    swapped = gb.predict(model, idata, pd.DataFrame(X_NEW[:, ::-1], columns=COLUMNS[::-1]))
    np.testing.assert_array_equal(right["mean"].values, swapped["mean"].values)
    np.testing.assert_array_equal(right["mean"].values, gb.predict(model, idata, X_NEW)["mean"].values)
    with pytest.raises(ValueError, match=r"missing \['bmi'\], unknown \['weight'\]"):
        gb.predict(idata, pd.DataFrame(X_NEW, columns=["age", "weight"]))
    with pytest.raises(ValueError, match=r"missing \['bmi'\]"):
        gb.sample_posterior_predictive(idata, X_new=pd.DataFrame(X_NEW[:, :1], columns=["age"]))


class MyKernel(SquaredExponential):
    """A kernel of the user's own (a subclass is not the library's class: the spec cannot describe it)."""


def test_a_kernel_of_the_user_s_own_saves_and_predicting_without_the_model_names_it(tmp_path):
    model = gb.GPRegressor(X, F, kernel=MyKernel(2, ard=True, parameterisation="fg"))
    idata = _sampled(model)
    path = tmp_path / "own.nc"
    idata.to_netcdf(str(path))
    again = az.from_netcdf(str(path))
    assert json.loads(again.attrs["gpbayes_model"])["kernel"] == {"undescribable": f"{__name__}.MyKernel"}
    with pytest.raises(ValueError, match=r"kernel of a class gpbayes cannot describe .*MyKernel.*pass the model"):
        gb.predict(again, X_NEW)
    np.testing.assert_array_equal(gb.predict(model, again, X_NEW)["mean"].values,
                                  gb.predict(model, idata, X_NEW)["mean"].values)


class MyPoisson(gb.likelihoods.Poisson):
    """A likelihood of the user's own."""


def test_a_likelihood_of_the_user_s_own_is_named_too():
    model = gb.LatentGP(X, RNG.poisson(np.exp(F)), likelihood=MyPoisson())
    idata = gb.sample(model, method="aa", seed=2, progress=False, **SHORT)
    with pytest.raises(ValueError, match=r"likelihood of a class gpbayes cannot describe .*MyPoisson.*pass the model"):
        gb.sample_posterior_predictive(idata, X_new=X_NEW)
    assert gb.sample_posterior_predictive(model, idata, X_new=X_NEW, extend=False)["y"].shape == (1, 10, 4)


def test_a_result_without_a_spec_asks_for_the_model():
    model = gb.GPRegressor(X, F)
    idata = _sampled(model)
    del idata.attrs["gpbayes_model"]
    with pytest.raises(ValueError, match=r"carries no model .*pass the model"):
        gb.predict(idata, X_NEW)
    assert gb.predict(model, idata, X_NEW)["mean"].shape == (4,)  # read as before
