"""Results in the container of whichever ArviZ is installed (issue 41): ``arviz.InferenceData`` on
ArviZ 0.x, ``xarray.DataTree`` on 1.x, with the same groups, variable names, dims and attributes,
read back by every function of the library and through a NetCDF round trip.

Runs in both legs of ``.ci/run``: ArviZ 0.x on Python 3.11 (the suite) and ArviZ >= 1.1 with
PyMC >= 6 on Python 3.12 (a selection of files, this one among them).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

import gpbayes as gb
from gpbayes import io

az = pytest.importorskip("arviz")
pytest.importorskip("netCDF4")  # the NetCDF round trip (ArviZ 0.x writes with it; xarray's default engine on 1.x)

ARVIZ_1 = int(az.__version__.split(".", 1)[0]) >= 1
GROUPS = {"posterior", "sample_stats", "unconstrained_posterior", "constant_data", "observed_data",
          "log_likelihood", "posterior_predictive"}


def _result(seed=3):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(15, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(15)
    model = gb.GPRegressor(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 2 x 20 draws: not converged, as intended
        idata = gb.sample(model, method="slice", chains=2, draws=20, n_warmup=10, seed=seed, progress=False,
                          log_likelihood=True, posterior_predictive=True)
    return model, idata


def test_the_container_is_the_installed_arviz_ones_with_the_groups_names_dims_and_attrs():
    assert io.arviz_uses_datatree() == ARVIZ_1
    model, idata = _result()
    if ARVIZ_1:
        assert isinstance(idata, xr.DataTree)
    else:
        assert isinstance(idata, az.InferenceData)
    assert set(io.group_names(idata)) == GROUPS
    assert all(io.has_group(idata, g) for g in GROUPS) and not io.has_group(idata, "prior")
    with pytest.raises(KeyError, match="no group 'prior'"):
        io.group(idata, "prior")
    post = io.group(idata, "posterior")
    assert isinstance(post, xr.Dataset)
    assert list(post.data_vars) == ["lengthscale", "signal_variance", "noise_variance"]
    assert post["lengthscale"].dims == ("chain", "draw", "feature") and post["lengthscale"].shape == (2, 20, 2)
    assert post["signal_variance"].dims == ("chain", "draw")
    assert list(io.group(idata, "unconstrained_posterior").data_vars) == list(post.data_vars)
    assert io.group(idata, "log_likelihood")["y"].dims == ("chain", "draw", "obs")
    assert io.group(idata, "posterior_predictive")["y"].shape == (2, 20, 15)
    assert {"lp", "n_cubic"} <= set(io.group(idata, "sample_stats").data_vars)
    # the attributes: the seed at the top level and in each sampled group, the ArviZ schema's group attrs
    assert int(io.result_attrs(idata)["seed"]) == 3 and int(idata.attrs["seed"]) == 3
    assert post.attrs["inference_library"] == "gpbayes" and post.attrs["method"] == "slice"
    assert int(post.attrs["seed"]) == 3 and io.group(idata, "sample_stats").attrs["stopped"]
    # attribute access as ArviZ users write it works on both containers
    np.testing.assert_array_equal(idata.posterior["noise_variance"].values, post["noise_variance"].values)
    assert idata.posterior.sizes["draw"] == 20
    # the same seed, the same draws, whichever container holds them
    np.testing.assert_array_equal(gb.api.psi_draws(idata).values, gb.api.psi_draws(_result()[1]).values)


def test_the_library_reads_and_extends_either_container():
    model, idata = _result()
    table = gb.summary(idata)
    assert list(table.index) == ["lengthscale[0]", "lengthscale[1]", "signal_variance", "noise_variance"]
    assert {"mean", "sd", "ess_bulk", "r_hat", "n_cubic_per_draw"} <= set(table.columns)
    assert list(az.summary(idata, kind="stats").index) == list(table.index)
    pred = gb.predict(model, idata, np.zeros((3, 2)))
    assert pred["mean"].shape == (3,) and np.all(np.isfinite(pred["mean"].values))
    # extend=True replaces a group of the same name in place (no second copy)
    before = io.group(idata, "log_likelihood")["y"].values.copy()
    assert gb.compute_log_likelihood(model, idata) is idata
    assert io.group_names(idata).count("log_likelihood") == 1
    np.testing.assert_array_equal(io.group(idata, "log_likelihood")["y"].values, before)
    ds = gb.sample_posterior_predictive(model, idata, seed=1, extend=False)
    assert isinstance(ds, xr.Dataset) and ds["y"].shape == (2, 20, 15)
    gb.sample_posterior_predictive(model, idata, X_new=np.zeros((4, 2)), seed=1, predictions=True)
    assert {"predictions", "predictions_constant_data"} <= set(io.group_names(idata))
    assert io.group(idata, "predictions")["y"].dims == ("chain", "draw", "point")
    assert io.group(idata, "posterior_predictive")["y"].dims == ("chain", "draw", "obs")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 40 draws: ArviZ warns about the Pareto k of some points
        assert az.loo(idata) is not None


def test_make_idata_from_datasets_and_attrs():
    post = xr.Dataset({"a": (("chain", "draw"), np.arange(6.0).reshape(2, 3))})
    idata = io.make_idata({"posterior": post}, {"seed": 7})
    assert io.group_names(idata) == ["posterior"] and idata.attrs["seed"] == 7
    io.set_group(idata, "sample_stats", xr.Dataset({"lp": (("chain", "draw"), np.zeros((2, 3)))}))
    io.set_group(idata, "sample_stats", xr.Dataset({"lp": (("chain", "draw"), np.ones((2, 3)))}))
    assert io.group_names(idata) == ["posterior", "sample_stats"]
    assert float(io.group(idata, "sample_stats")["lp"].sum()) == 6.0


def test_a_netcdf_round_trip_keeps_groups_names_dims_attrs_and_values(tmp_path):
    model, idata = _result()
    path = tmp_path / "result.nc"
    idata.to_netcdf(path)
    again = az.from_netcdf(path)
    assert type(again) is type(idata)
    assert set(io.group_names(again)) == GROUPS
    assert int(again.attrs["seed"]) == 3
    for g in GROUPS:
        a, b = io.group(idata, g), io.group(again, g)
        assert list(a.data_vars) == list(b.data_vars), g
        for v in a.data_vars:
            assert a[v].dims == b[v].dims, (g, v)
            np.testing.assert_array_equal(a[v].values, b[v].values)
        assert b.attrs["inference_library"] == "gpbayes"
    assert io.group(again, "posterior").attrs["method"] == "slice"
    # the reloaded result serves the library as the original does
    x = np.array([[0.3, -0.2]])
    np.testing.assert_array_equal(gb.predict(model, again, x)["mean"].values,
                                  gb.predict(model, idata, x)["mean"].values)
    np.testing.assert_array_equal(gb.summary(again)["mean"].values, gb.summary(idata)["mean"].values)


def test_smoothed_log_weights_on_either_arviz():
    from gpbayes.diagnostics import smoothed_log_weights

    rng = np.random.default_rng(1)
    lw = rng.standard_t(30, size=(2, 1000)) * 1.5 + 5
    lw[0, 3] = -np.inf
    smoothed, k = smoothed_log_weights(lw)
    assert smoothed.shape == lw.shape and np.isneginf(smoothed[0, 3]) and np.sum(np.isneginf(smoothed)) == 1
    assert 0.3 < k < 0.55  # 0.409 by arviz.psislw (0.x), 0.403 by arviz-stats (1.x) on these weights
    # the largest weights are smoothed, the rest kept up to a constant
    order = np.argsort(lw[1])
    low = order[:500]
    np.testing.assert_allclose(smoothed[1, low] - lw[1, low], (smoothed[1, low] - lw[1, low])[0], atol=1e-9)
    # a tail too short to fit (fewer than 25 weights): unsmoothed, k = inf on both
    few, k_few = smoothed_log_weights(lw[1, :20])
    assert k_few == np.inf and np.all(np.isfinite(few))
    # equal weights: no tail above the cutoff, unsmoothed, k = inf on both (arviz-stats alone would raise)
    equal, k_equal = smoothed_log_weights(np.full(400, 2.0))
    assert k_equal == np.inf and np.all(equal == equal[0])


def test_summary_of_a_point_estimate_and_of_an_importance_sample():
    model, _ = _result()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        point = gb.sample(model, method="type2-ml", seed=1, progress=False)
        amis = gb.sample(model, method="amis", n_iterations=3, n_per_iteration=20, n_resample=40, seed=1,
                         progress=False)
    assert list(gb.summary(point).columns) == ["estimate"] and len(gb.summary(point)) == 4
    table = gb.summary(amis)
    assert 1.0 <= table["ess_importance"].iloc[0] <= 60 and len(table) == 4
