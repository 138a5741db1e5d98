"""The models' default priors are the documented ones (F&G 2014 Sec. 4.4), from one source (``priors``)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import gpbayes as gb
from gpbayes import priors


def _data(n=12, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, X[:, 0] + 0.3 * rng.standard_normal(n)


@pytest.mark.parametrize("d", [1, 3, 8])
@pytest.mark.parametrize("ard", [False, True])
def test_default_prior_is_gamma_1_over_sqrt_d_for_isotropic_and_ard(d, ard):
    """docs/api.md: tau_d ~ Gamma(1, 1/sqrt(d)), sigma ~ Gamma(1.1, 0.1); d = the number of inputs, not of taus."""
    X, y = _data(d=d)
    expected_tau = priors.Gamma(1.0, 1.0 / math.sqrt(d))
    n_tau = d if ard else 1
    for model in (gb.GPClassifier(X, y > 0, ard=ard), gb.PoissonGP(X, np.arange(12) % 3, ard=ard),
                  gb.GPRegressor(X, y, ard=ard)):
        comps = model.prior.components
        assert comps[:n_tau] == (expected_tau,) * n_tau, (type(model).__name__, comps)
        assert comps[n_tau] == priors.Gamma(1.1, 0.1)
    if d > 1 and not ard:  # the bug this guards against: Gamma(1, 1) from "one lengthscale"
        assert gb.GPClassifier(X, y > 0, ard=False).prior.components[0].rate != 1.0


def test_default_prior_is_the_reproduction_s_prior_for_the_same_kernel():
    """gpbayes_repro.builders' {shape: 1, rate_times_sqrt_d: 1} / Gamma(1.1, 0.1) is the library default."""
    builders = pytest.importorskip("gpbayes_repro.builders")
    X, y = _data(d=5)
    for ard in (False, True):
        model = gb.GPClassifier(X, y > 0, ard=ard)
        ref = builders.kernel_prior(model.kernel, {"shape": 1.0, "rate_times_sqrt_d": 1.0},
                                    {"shape": 1.1, "rate": 0.1})
        psi = np.linspace(-1.0, 1.0, model.kernel.n_params)
        assert model.prior.log_density(psi) == pytest.approx(ref.log_density(psi), rel=1e-14)
