"""gpbayes_repro.builders: the one place config blocks become kernels and priors."""

import math

import numpy as np
import pytest

from gpbayes import priors
from gpbayes.kernels import SquaredExponential
from gpbayes_repro import builders


def test_fg_dimension_scaled_gamma():
    # F&G 2014 Sec. 4.2: tau ~ G(1, 1/sqrt(d))
    p = builders.prior({"shape": 1, "rate_times_sqrt_d": 1.0}, d=4)
    assert isinstance(p, priors.Gamma) and p.shape == 1 and p.rate == 0.5


def test_rate_times_sqrt_d_needs_d():
    with pytest.raises(ValueError, match="sqrt"):
        builders.prior({"shape": 1, "rate_times_sqrt_d": 1.0})


def test_plain_and_family_spellings_agree():
    a = builders.prior({"shape": 1.2, "rate": 0.2})
    b = builders.prior({"gamma": {"shape": 1.2, "rate": 0.2}})
    assert a == b == priors.Gamma(1.2, 0.2)
    assert isinstance(builders.prior({"loguniform": {"low": 0.1, "high": 10}}), priors.LogUniform)
    with pytest.raises(ValueError, match="unknown prior family"):
        builders.prior({"beta": {"a": 1}})
    with pytest.raises(ValueError, match="mapping"):
        builders.prior([1, 2])


@pytest.mark.parametrize("ard", [False, True])
def test_kernel_prior_order_and_values(ard):
    d = 3
    k = SquaredExponential(d, ard=ard, parameterisation="fg")
    p = builders.kernel_prior(k, {"shape": 1, "rate_times_sqrt_d": 1.0}, {"shape": 1.2, "rate": 0.2},
                              extra=[{"gamma": {"shape": 1, "rate": 1}}, priors.LogNormal(0.0, 1.0)])
    n_scale = d if ard else 1
    assert len(p) == n_scale + 3
    tau = priors.Gamma(1, 1 / math.sqrt(d))
    by_hand = priors.IndependentPrior(tuple([tau] * n_scale + [priors.Gamma(1.2, 0.2), priors.Gamma(1, 1),
                                                                 priors.LogNormal(0.0, 1.0)]))
    psi = np.random.default_rng(0).normal(size=len(p))
    assert p.log_density(psi) == by_hand.log_density(psi)  # bit for bit


def test_kernel_prior_needs_amplitude_unless_fixed():
    with pytest.raises(ValueError, match="amplitude"):
        builders.kernel_prior(SquaredExponential(2), {"shape": 1, "rate": 1})
    k = SquaredExponential(2, parameterisation="gplvm", fixed_amplitude=True)
    assert len(builders.kernel_prior(k, {"shape": 1, "rate": 1})) == 1


def test_kernels():
    assert builders.se_kernel(3, "ard", "ma").n_scale == 3
    assert builders.se_kernel(3, "rbf", "ma").n_scale == 1
    with pytest.raises(ValueError, match="kernel must be"):
        builders.se_kernel(3, "matern", "ma")
    k = builders.kernel_from_spec({"ard": True, "parameterisation": "amis", "nugget": 1e-6}, 2)
    assert k == SquaredExponential(2, ard=True, parameterisation="amis", nugget=1e-6)


def test_rate_for_d_is_the_stated_rate_at_its_d_and_scales_as_one_over_sqrt_d_elsewhere():
    spec = {"shape": 1.0, "rate": 0.2773501, "rate_for_d": 13}
    # at d = 13 exactly the stated rate: the prior the foundation slice has always used on Housing
    assert builders.prior(spec, d=13) == builders.prior({"gamma": {"shape": 1.0, "rate": 0.2773501}})
    for d in (1, 4, 5, 30):
        p = builders.prior(spec, d=d)
        assert p.shape == 1.0 and p.rate == pytest.approx(1 / math.sqrt(d), rel=1e-7), d
    with pytest.raises(ValueError, match="sqrt"):
        builders.prior(spec)


def test_regression_mh_prior_on_a_user_set_scales_with_its_d():
    """Issue 14 item 5: a user's regression set of d = 5 gets tau ~ G(1, 1/sqrt(5)), not Housing's 1/sqrt(13);
    Housing (d = 13) keeps exactly the rate 0.2773501 of the shipped config."""
    import xarray as xr
    import yaml

    from gpbayes_repro.experiments import regression_mh

    with open(builders.__file__.rsplit("/src/", 1)[0] + "/config/config.yaml") as fh:
        exp_cfg = yaml.safe_load(fh)["regression_mh"]
    rng = np.random.default_rng(0)
    for d, rate in [(5, 1 / math.sqrt(5)), (13, 0.2773501)]:
        ds = xr.Dataset({"X": (("n", "feature"), rng.normal(size=(20, d))), "y": (("n",), rng.normal(size=20))},
                        attrs={"task": "regression"})
        prior = regression_mh.build_prior(regression_mh.build_model(ds, exp_cfg), exp_cfg)
        scales = prior.components[:d]  # ARD: one lengthscale per input, then amplitude and noise variance
        assert all(p == scales[0] for p in scales) and scales[0].shape == 1.0
        assert scales[0].rate == pytest.approx(rate, rel=1e-7), d
        if d == 13:
            assert scales[0].rate == 0.2773501
