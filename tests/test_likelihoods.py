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


# ---------------------------------------------------------------------------
# the protocol members (gpbayes.likelihoods.Likelihood)
# ---------------------------------------------------------------------------
def _tilted_by_quad(lik, y, mu, s2):
    """log Z, mean, variance of p(y | f) N(f; mu, s2) by adaptive quadrature (scipy)."""
    import math

    from scipy import integrate

    sd = math.sqrt(s2)
    w = lambda f: math.exp(float(lik.log_lik(np.array(y), np.array(f))) - 0.5 * (f - mu) ** 2 / s2) / (
        sd * math.sqrt(2 * math.pi))
    kw = dict(limit=400, epsabs=1e-14, epsrel=1e-12, points=[mu])
    lo, hi = mu - 14 * sd, mu + 14 * sd
    Z = integrate.quad(w, lo, hi, **kw)[0]
    m1 = integrate.quad(lambda f: f * w(f), lo, hi, **kw)[0] / Z
    return math.log(Z), m1, integrate.quad(lambda f: (f - m1) ** 2 * w(f), lo, hi, **kw)[0] / Z


@pytest.mark.parametrize("lik,y", LIKS, ids=lambda v: getattr(v, "name", ""))
def test_every_likelihood_implements_the_protocol(lik, y):
    from gpbayes.likelihoods import Likelihood

    assert isinstance(lik, Likelihood)
    assert lik.approximations[0] in ("laplace", "ep")


@pytest.mark.parametrize("y,mu,s2", [(0.0, 0.5, 1.0), (3.0, -1.0, 4.0), (40.0, 0.0, 2.0), (1.0, 1.0, 0.01)])
def test_poisson_tilted_moments_by_the_quadrature_fallback(y, mu, s2):
    # no closed form: the shared adaptive Gauss-Hermite helper; a count of 40 makes the likelihood
    # much narrower than the cavity, where nodes placed on the cavity alone would miss its mass
    lik = Poisson(exposure=1.5, offset=0.2)
    lZ, d1, d2 = lik.tilted_moments(np.array([y]), np.array([mu]), np.array([s2]))
    ref = _tilted_by_quad(lik, y, mu, s2)
    np.testing.assert_allclose([lZ[0], mu + s2 * d1[0], s2 + s2 * s2 * d2[0]], ref, rtol=1e-8, atol=1e-10)


def test_closed_form_tilted_moments_and_predictives():
    from scipy.stats import lognorm

    # Gaussian: Z = N(y; mu, s2 + noise)
    g = Gaussian(0.3)
    lZ, d1, d2 = g.tilted_moments(np.array([1.2]), np.array([0.4]), np.array([2.0]))
    ref = _tilted_by_quad(g, 1.2, 0.4, 2.0)
    np.testing.assert_allclose([lZ[0], 0.4 + 2.0 * d1[0], 2.0 + 4.0 * d2[0]], ref, rtol=1e-10)
    np.testing.assert_allclose(g.log_predictive_density(1.2, 0.4, 2.0), norm.logpdf(1.2, 0.4, np.sqrt(2.3)))
    # probit: log p(y | D) = log Phi(y m / sqrt(1 + v)) (R&W eq. 3.80), against quadrature
    p = Probit()
    for y in (1.0, -1.0):
        np.testing.assert_allclose(p.log_predictive_density(y, 0.7, 3.0), _tilted_by_quad(p, y, 0.7, 3.0)[0],
                                   rtol=1e-10)
    np.testing.assert_allclose(p.predictive_mean(0.7, 3.0), norm.cdf(0.7 / 2.0))
    # Poisson: the rate per unit exposure, E exp(f + m) = exp(mean + m + var / 2)
    q = Poisson(exposure=3.0, offset=-0.4)
    np.testing.assert_allclose(q.predictive_mean(0.5, 0.8), lognorm(s=np.sqrt(0.8), scale=np.exp(0.1)).mean())
    # logistic: 32-point Gauss-Hermite (the existing approach), within 1e-7 of quadrature at sd <= 2
    lg = Logistic()
    np.testing.assert_allclose(lg.predictive_mean(np.array([0.3]), np.array([3.5])),
                               np.exp(_tilted_by_quad(lg, 1.0, 0.3, 3.5)[0]), atol=2e-7)


def test_offsets():
    q = Poisson(exposure=2.0, offset=0.1).with_offset(0.5)
    assert q == Poisson(exposure=2.0, offset=0.6)
    with pytest.raises(NotImplementedError, match="probit likelihood has no offset"):
        Probit().with_offset(0.5)
