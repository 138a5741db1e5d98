"""The data's units (issue 41, point 2; ``gpbayes.units``): priors, fixed values and the posterior in X's

and y's units by default, checked against independent answers (a rescaled problem, the hand-transformed
standardised prior, each kernel's formula)."""

import json
import math

import numpy as np
import pytest

import gpbayes as gb
from gpbayes import kernels, priors, units

RNG = np.random.default_rng(4)
X = RNG.normal(size=(20, 2)) * [3.0, 0.5] + [10.0, -2.0]
Y = np.sin(X[:, 0]) + 0.2 * X[:, 1] + 0.1 * RNG.normal(size=20)


def test_bad_units_value_names_the_allowed_ones():
    for bad in ("raw", "Data", None, 1):
        with pytest.raises(ValueError, match=r"units must be one of \['data', 'standardized'\]"):
            gb.GPRegressor(X, Y, units=bad)
    with pytest.raises(ValueError, match="units='data' is not offered"):
        gb.GPLVMRegressor(X, np.c_[Y, Y ** 2], units="data")


def test_rescaled_data_gives_rescaled_posterior():
    """(c X, d y) with the priors carried to the new units reports c times the lengthscales and d^2 times the
    variances of (X, y): the same chain, read in other units."""
    c, d = 12.0, 3.0
    base = {"lengthscale": priors.Gamma(2.0, 1.0), "signal_variance": priors.Gamma(1.1, 0.1),
            "noise_variance": priors.InverseGamma(1.0, 0.01)}
    moved = {"lengthscale": priors.Gamma(2.0, 1.0 / c), "signal_variance": priors.Gamma(1.1, 0.1 / d ** 2),
             "noise_variance": priors.InverseGamma(1.0, 0.01 * d ** 2)}
    run = dict(chains=1, draws=30, n_warmup=30, seed=1, progress=False)  # same chain: convergence not the point
    a = gb.sample(gb.GPRegressor(X, Y, prior=base), "rwmh", **run)
    b = gb.sample(gb.GPRegressor(c * X, d * Y, prior=moved), "rwmh", **run)
    for name, factor in (("lengthscale", c), ("signal_variance", d ** 2), ("noise_variance", d ** 2)):
        np.testing.assert_allclose(b.posterior[name].values, factor * a.posterior[name].values, rtol=1e-6)
    assert b.posterior.attrs["units"] == "data" and b.unconstrained_posterior.attrs["units"] == "standardized"


def test_default_prior_is_unchanged_and_only_the_report_moves():
    run = dict(chains=1, draws=10, n_warmup=10, seed=2, progress=False)
    data = gb.GPRegressor(X, Y)
    std = gb.GPRegressor(X, Y, units="standardized")
    assert data.prior == std.prior
    a, b = gb.sample(data, "rwmh", **run), gb.sample(std, "rwmh", **run)
    np.testing.assert_array_equal(a.unconstrained_posterior["lengthscale"].values,
                                  b.unconstrained_posterior["lengthscale"].values)
    np.testing.assert_allclose(a.posterior["lengthscale"].values, b.posterior["lengthscale"].values * data.x_scale,
                               rtol=1e-12)
    np.testing.assert_allclose(a.posterior["noise_variance"].values,
                               b.posterior["noise_variance"].values * data.y_scale ** 2, rtol=1e-12)


def test_user_prior_in_data_units_is_the_hand_transformed_standardised_prior():
    data = gb.GPRegressor(X, Y, prior={"lengthscale[0]": priors.LogNormal(math.log(12.0), 0.3),
                                       "signal_variance": priors.Gamma(2.0, 0.5)})
    s0, S = data.x_scale[0], data.y_scale
    std = gb.GPRegressor(X, Y, units="standardized",
                         prior={"lengthscale[0]": priors.LogNormal(math.log(12.0 / s0), 0.3),
                                "signal_variance": priors.Gamma(2.0, 0.5 * S ** 2)})
    for psi in RNG.normal(size=(5, 4)):
        # on psi the density of a shifted LogNormal / of a Gamma with its rate carried over is the same function
        assert data.prior.log_density(psi) == pytest.approx(std.prior.log_density(psi), rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(data.prior.grad_log_density(psi), std.prior.grad_log_density(psi), rtol=1e-10)


def test_a_yearly_period_on_monthly_data_is_written_as_12():
    t = np.arange(48.0)[:, None]  # months
    y = np.sin(2 * np.pi * t[:, 0] / 12.0)
    model = gb.GPRegressor(t, y, kernel=kernels.Periodic(1).fix(period=12.0),
                           prior={"lengthscale": priors.LogNormal(0.0, 1.0)})
    fixed = model.kernel.full_psi(np.zeros(model.kernel.n_params))
    assert math.exp(fixed[1]) == pytest.approx(12.0 / model.x_scale[0], rel=1e-14)
    free = gb.GPRegressor(t, y, kernel=kernels.Periodic(1), prior={"period": priors.LogNormal(math.log(12.0), 0.1)})
    shift = free.log_unit_shifts()
    assert shift[1] == pytest.approx(math.log(free.x_scale[0]))
    assert shift[0] == 0.0  # Periodic's lengthscale is dimensionless
    assert free.prior.components[1].log_density(math.log(12.0) - shift[1]) == pytest.approx(
        priors.LogNormal(math.log(12.0), 0.1).log_density(math.log(12.0)))


def _K(kernel, psi, A):
    return np.asarray(kernel(np.asarray(psi, dtype=float), A))


@pytest.mark.parametrize("kernel", [kernels.SquaredExponential(2, ard=True), kernels.SquaredExponential(2, ard=True,
                                    parameterisation="ma"), kernels.Matern32(2, ard=True), kernels.Cosine(2, ard=True),
                                    kernels.Linear(2, ard=True), kernels.Polynomial(2, degree=2, ard=True),
                                    kernels.RationalQuadratic(2, ard=True), kernels.Periodic(1),
                                    kernels.SquaredExponential(2, ard=True, parameterisation="gplvm")])
def test_each_kernels_unit_rule_against_its_formula(kernel):
    """k_data(x, x'; theta_data) = S^2 k(x~, x~'; theta) with x~ = (x - m) / s: the data-unit kernel at the
    shifted psi on the centred data equals S^2 times the kernel on the standardised data."""
    d = kernel.input_dim
    A = X[:8, :d]
    m, s, S = A.mean(axis=0), A.std(axis=0), 2.5
    if type(kernel).__name__ == "Periodic":
        s = np.full(d, s[0])
    psi = RNG.normal(scale=0.3, size=kernel.n_params)
    shift = np.array(units.kernel_log_shifts(kernel, np.log(s), math.log(S)))
    np.testing.assert_allclose(_K(kernel, psi + shift, A - m), S ** 2 * _K(kernel, psi, (A - m) / s), rtol=1e-10)


def test_products_sums_and_constants():
    k = kernels.SquaredExponential(1) * kernels.Periodic(1) + kernels.Constant()
    A = X[:6, :1]
    m, s, S = A.mean(axis=0), A.std(axis=0), 0.4
    psi = RNG.normal(scale=0.3, size=k.n_params)
    shift = np.array(units.kernel_log_shifts(k, np.log(s), math.log(S)))
    np.testing.assert_allclose(_K(k, psi + shift, A - m), S ** 2 * _K(k, psi, (A - m) / s), rtol=1e-10)
    c = units.to_model_kernel(kernels.SquaredExponential(1) + 2.0, np.log(s), math.log(S), "test")
    assert c.kernels[1].value == pytest.approx(2.0 / S ** 2)


def test_shared_parameter_and_unknown_kernel():
    iso = gb.GPRegressor(X, Y, ard=False)
    assert np.isnan(iso.log_unit_shifts()[0])
    with pytest.raises(units.UnitsError, match="no single unit"):
        gb.GPRegressor(X, Y, ard=False, prior={"lengthscale": priors.Gamma(1.0, 1.0)})
    gb.GPRegressor(X, Y, ard=False, prior={"lengthscale": priors.Gamma(1.0, 1.0)}, units="standardized")
    idata = gb.sample(iso, "rwmh", chains=1, draws=5, n_warmup=5, seed=0, progress=False)
    assert idata.posterior.attrs["standardized_variables"] == "lengthscale"
    with pytest.raises(units.UnitsError, match="no known rule"):
        units.kernel_log_shifts(object.__new__(type("Mine", (), {"param_names": ["a"], "n_params": 1})),
                                np.zeros(1), 0.0)


def test_latent_models_rescale_only_x_side():
    model = gb.GPClassifier(X, Y > 0)
    shift = model.log_unit_shifts()
    np.testing.assert_allclose(shift[:2], np.log(model.x_scale))
    assert shift[2] == 0.0


def test_sparse_gp_moves_only_x_side_and_its_noise_stays_in_y_units():
    """SparseGP does not standardise y: its lengthscale moves by log s, signal_std and the sampled
    noise_variance (already in y's units squared) by 0; a noise prior given in y's units is not wrapped."""
    x = np.linspace(0.0, 30.0, 40)[:, None]
    y = np.sin(x[:, 0] / 3.0) + 0.1 * RNG.normal(size=40)
    model = gb.SparseGP(x, y, likelihood="gaussian", n_inducing=5, maxiter=4,
                        prior={"noise_variance": priors.HalfNormal(0.5)})
    assert model.hyperparameter_names == ["lengthscale", "signal_std", "noise_variance"]
    np.testing.assert_allclose(model.log_unit_shifts(), [math.log(model.x_scale[0]), 0.0, 0.0])
    assert model.prior.components[-1] == priors.HalfNormal(0.5)


def test_sklearn_estimators_pass_units_through():
    from gpbayes.sklearn import BayesianGPRegressor

    reg = BayesianGPRegressor(method="rwmh", draws=5, n_warmup=5, chains=1, units="standardized").fit(X, Y)
    assert reg.model_.units == "standardized" and reg.idata_.posterior.attrs["units"] == "standardized"
    assert BayesianGPRegressor().get_params()["units"] == "data"


def test_units_travel_with_the_result_and_old_results_read_standardised():
    model = gb.GPRegressor(X, Y, prior={"lengthscale": priors.Gamma(2.0, 0.2)})
    idata = gb.sample(model, "rwmh", chains=1, draws=5, n_warmup=5, seed=3, progress=False)
    back = gb.model_spec.rebuild(idata)
    assert back.units == "data"
    np.testing.assert_array_equal(back.log_unit_shifts(), model.log_unit_shifts())
    assert back.prior == model.prior
    Xn = X[:3] + 0.1
    np.testing.assert_array_equal(gb.predict(idata, Xn)["mean"].values, gb.predict(model, idata, Xn)["mean"].values)
    spec = json.loads(idata.attrs["gpbayes_model"])
    del spec["units"]
    idata.attrs["gpbayes_model"] = json.dumps(spec)
    assert gb.model_spec.rebuild(idata).units == "standardized"


pytestmark = pytest.mark.filterwarnings("ignore::gpbayes.api.NotConvergedWarning")
