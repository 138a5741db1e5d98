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
