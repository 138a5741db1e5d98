"""HalfNormal, Exponential and HalfCauchy on psi = log theta: against scipy.stats (density, draws), quadrature
(normalisation, the s.d. of log theta behind the slice widths) and finite differences (gradient)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from gpbayes import priors
from gpbayes.mcmc import hyper_slice

# each new family beside scipy's distribution of theta
FAMILIES = [
    (priors.HalfNormal(0.5), stats.halfnorm(scale=0.5)),
    (priors.HalfNormal(3.0), stats.halfnorm(scale=3.0)),
    (priors.Exponential(2.0), stats.expon(scale=1 / 2.0)),
    (priors.Exponential(0.1), stats.expon(scale=10.0)),
    (priors.HalfCauchy(1.0), stats.halfcauchy(scale=1.0)),
    (priors.HalfCauchy(0.05), stats.halfcauchy(scale=0.05)),
]
IDS = [repr(p) for p, _ in FAMILIES]


@pytest.mark.parametrize("prior,dist", FAMILIES, ids=IDS)
def test_density_on_psi_is_scipys_density_of_theta_times_the_jacobian(prior, dist):
    psi = np.linspace(-6.0, 4.0, 41)
    np.testing.assert_allclose(prior.log_density(psi), dist.logpdf(np.exp(psi)) + psi, rtol=1e-12, atol=1e-12)
    assert np.ndim(prior.log_density(0.3)) == 0


@pytest.mark.parametrize("prior,dist", FAMILIES, ids=IDS)
def test_density_on_psi_integrates_to_one(prior, dist):
    centre = float(np.log(dist.median()))
    # psi below centre - 60 or above centre + 40 holds less than e^-40 of the mass for every family here
    total, _ = integrate.quad(lambda s: math.exp(prior.log_density(s)), centre - 60, centre + 40, limit=400,
                              points=[centre - 2, centre, centre + 2])
    assert total == pytest.approx(1.0, abs=1e-8)


@pytest.mark.parametrize("prior,dist", FAMILIES, ids=IDS)
def test_gradient_matches_central_differences(prior, dist):
    eps = 1e-6
    for psi in np.log(dist.median()) + np.array([-3.0, -0.7, 0.0, 0.4, 2.5]):
        fd = (prior.log_density(psi + eps) - prior.log_density(psi - eps)) / (2 * eps)
        assert prior.grad_log_density(psi) == pytest.approx(fd, rel=1e-6, abs=1e-8)
    # vectorised over psi, as the other families are
    psi = np.array([-1.0, 0.0, 1.0])
    assert prior.grad_log_density(psi).shape == (3,)


@pytest.mark.parametrize("prior,dist", FAMILIES, ids=IDS)
def test_draws_have_scipys_quantiles_and_mean_within_monte_carlo_error(prior, dist):
    n = 20_000
    draws = prior.sample_theta(np.random.default_rng(11), size=n)
    assert draws.shape == (n,) and np.all(draws > 0)
    for q in (0.1, 0.5, 0.9):
        frac = np.mean(draws <= dist.ppf(q))  # Binomial(n, q) / n exactly
        assert abs(frac - q) / math.sqrt(q * (1 - q) / n) < 4.0, q
    if np.isfinite(dist.mean()):  # HalfCauchy has none
        assert abs(draws.mean() - dist.mean()) / (dist.std() / math.sqrt(n)) < 4.0
    one = prior.sample_theta(np.random.default_rng(1))
    assert np.ndim(one) == 0 and float(one) > 0


def test_vectorised_density_sums_the_components_with_the_new_families():
    prior = priors.IndependentPrior((priors.HalfNormal(0.5), priors.Gamma(1.1, 0.1), priors.Exponential(2.0),
                                     priors.HalfCauchy(1.0), priors.HalfNormal(2.0), priors.InverseGamma(1.0, 0.01),
                                     priors.HalfCauchy(0.1), priors.LogNormal(0.0, 1.0)))
    fast = priors.vectorised_log_density(prior)
    assert fast is not None
    rng = np.random.default_rng(3)
    for _ in range(5):
        psi = rng.normal(scale=2.0, size=len(prior))
        assert fast(psi) == pytest.approx(prior.log_density(psi), rel=1e-13, abs=1e-12)
    grad = prior.grad_log_density(psi)
    assert grad.shape == (len(prior),)


def test_sample_psi_and_make_prior_take_the_new_families():
    prior = priors.independent([{"half_normal": {"scale": 0.5}}, {"exponential": {"rate": 2.0}},
                                {"half_cauchy": {"scale": 1.0}}])
    assert prior.components == (priors.HalfNormal(0.5), priors.Exponential(2.0), priors.HalfCauchy(1.0))
    psi = prior.sample_psi(np.random.default_rng(0))
    assert psi.shape == (3,) and np.isfinite(prior.log_density(psi))
    with pytest.raises(ValueError, match="unknown prior family 'halfnormal'; choose one of .*'half_normal'"):
        priors.make_prior({"halfnormal": {"scale": 1.0}})
    with pytest.raises(ValueError, match="bad parameters for half_cauchy"):
        priors.make_prior({"half_cauchy": {"rate": 1.0}})


@pytest.mark.parametrize("bad", [lambda: priors.HalfNormal(0.0), lambda: priors.HalfNormal(-1.0),
                                 lambda: priors.Exponential(0.0), lambda: priors.HalfCauchy(float("inf"))])
def test_bad_parameters_are_refused(bad):
    with pytest.raises(ValueError, match="needs a finite"):
        bad()


@pytest.mark.parametrize("prior,dist", FAMILIES, ids=IDS)
def test_slice_width_is_four_sds_of_log_theta_by_quadrature(prior, dist):
    """hyper_slice.prior_widths states the s.d. of log theta in closed form; here it is integrated on psi."""
    c = float(np.log(dist.median()))
    moment = [integrate.quad(lambda s, k=k: s**k * math.exp(prior.log_density(s)), c - 60, c + 40, limit=400,
                             points=[c - 2, c, c + 2])[0] for k in (1, 2)]
    sd = math.sqrt(moment[1] - moment[0] ** 2)
    width = hyper_slice.prior_widths(priors.IndependentPrior((prior,)))[0]
    assert width == pytest.approx(4.0 * sd, rel=1e-7)
