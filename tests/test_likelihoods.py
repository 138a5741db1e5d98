import numpy as np
import pytest
from scipy.stats import norm, poisson

from gpbayes.likelihoods import Gaussian, Logistic, Poisson, Probit, make_likelihood

LIKS = [
    (Probit(), np.array([-1.0, 1.0, 1.0, -1.0, 1.0])),
    (Logistic(), np.array([-1.0, 1.0, 1.0, -1.0, 1.0])),
    (Gaussian(0.3), np.array([0.2, -1.0, 3.0, 0.0, 1.5])),
    (Poisson(exposure=2.0, offset=-0.5), np.array([0.0, 1.0, 4.0, 2.0, 7.0])),
]
F = np.array([-2.5, -0.3, 0.0, 0.8, 3.0])


@pytest.mark.parametrize("lik,y", LIKS, ids=lambda v: getattr(v, "name", ""))
def test_derivatives_match_finite_differences(lik, y):
    eps = 1e-5
    lp = lambda f: lik.log_lik(y, f)
    np.testing.assert_allclose(lik.d1(y, F), (lp(F + eps) - lp(F - eps)) / (2 * eps), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(lik.d2(y, F), (lik.d1(y, F + eps) - lik.d1(y, F - eps)) / (2 * eps), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(lik.d3(y, F), (lik.d2(y, F + eps) - lik.d2(y, F - eps)) / (2 * eps), rtol=1e-5, atol=1e-7)


def test_values_against_scipy():
    y = np.array([-1.0, 1.0, 1.0, -1.0, 1.0])
    np.testing.assert_allclose(Probit().log_lik(y, F), norm.logcdf(y * F), rtol=1e-12)
    np.testing.assert_allclose(Logistic().log_lik(y, F), np.log(1 / (1 + np.exp(-y * F))), rtol=1e-12)
    np.testing.assert_allclose(Gaussian(0.3).log_lik(F, F + 1), norm.logpdf(F, F + 1, np.sqrt(0.3)), rtol=1e-12)
    c = np.array([0.0, 1.0, 4.0, 2.0, 7.0])
    np.testing.assert_allclose(Poisson(2.0, -0.5).log_lik(c, F), poisson.logpmf(c, 2.0 * np.exp(F - 0.5)), rtol=1e-12)


def test_probit_stable_far_in_tail():
    # log Phi(-40) ~ -804.6; the ratio N/Phi must not overflow
    assert np.isfinite(Probit().d1(np.array([1.0]), np.array([-40.0]))).all()
    assert Probit().log_lik(np.array([1.0]), np.array([-40.0]))[0] == pytest.approx(norm.logcdf(-40.0))


def test_bad_targets_are_named():
    with pytest.raises(ValueError, match=r"\{-1, \+1\}.*\[0\.0, 2\.0\]"):
        Probit().check_targets(np.array([0.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match="NaN"):
        Logistic().check_targets(np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match="non-negative integer"):
        Poisson().check_targets(np.array([1.0, -2.0, 0.5]))
    with pytest.raises(ValueError, match="unknown likelihood"):
        make_likelihood("cauchy")
