"""F&G experiment functions: simulation, Fig. 2 grid and its summary."""

import numpy as np
import pytest

from gpbayes import priors
from gpbayes.experiments import pm_gpc


def test_simulated_data_balanced_in_unit_cube():
    X, y = pm_gpc.simulate_classification(np.random.default_rng(0), 40, 3, 0.5, 2.0)
    assert X.shape == (40, 3) and np.all((X >= 0) & (X <= 1))
    assert np.sum(y > 0) == np.sum(y < 0) == 20
    with pytest.raises(ValueError, match="even"):
        pm_gpc.simulate_classification(np.random.default_rng(0), 41, 3, 0.5, 2.0)


def test_fig2_grid_mean_estimate_is_unbiased_and_normalised():
    rng = np.random.default_rng(1)
    X, y = pm_gpc.simulate_classification(rng, 20, 2, 0.35, 2.08)
    tau = np.linspace(0.1, 1.0, 7)
    ds = pm_gpc.pm_variance_grid(X, y, sigma=2.08, tau_grid=tau, approximations=["laplace", "ep"],
                                 n_imps=[1, 64], n_reps=400, rng=rng, nugget=1e-6)
    est = np.exp(ds["log_marginal_estimate"])
    # every method estimates the same p(y|tau): the means agree within MC error
    ref = est.sel(approximation="ep", n_imp=64)
    ref_mean, ref_se = ref.mean("rep"), ref.std("rep") / np.sqrt(400)
    for a in ("laplace", "ep"):
        for k in (1, 64):
            e = est.sel(approximation=a, n_imp=k)
            se = np.sqrt(e.var("rep") / 400 + ref_se**2)
            assert np.all(np.abs(e.mean("rep") - ref_mean) < 5 * se)
    post = pm_gpc.normalised_posterior(ds, priors.Gamma(1, 1 / np.sqrt(2)))
    mean_ref = post.sel(approximation="ep", n_imp=64).mean("rep")
    assert np.trapezoid(mean_ref.values, tau) == pytest.approx(1.0, rel=1e-10)
    widths = pm_gpc.fig2_band_widths(post)
    assert float(widths.sel(approximation="ep", n_imp=64)) < float(widths.sel(approximation="laplace", n_imp=1))
    assert set(widths.dims) == {"approximation", "n_imp"}


def test_fig2_claims_verdicts_follow_the_numbers():
    import xarray as xr
    w = xr.DataArray(np.array([[[1.5, 0.3], [0.7, 0.1]]]), dims=("n", "approximation", "n_imp"),
                     coords={"n": [50], "approximation": ["laplace", "ep"], "n_imp": [1, 64]})
    c = pm_gpc.fig2_claims(w.to_dataset(name="relative_band_width"))
    assert [x["passed"] for x in c] == [True, True]
    w2 = w.copy()
    w2.loc[dict(approximation="ep", n_imp=1)] = 2.0
    c = pm_gpc.fig2_claims(w2.to_dataset(name="relative_band_width"))
    assert [x["passed"] for x in c] == [False, True]
