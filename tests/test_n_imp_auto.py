"""The noise-aware N_imp (issue 24 §3): ``estimators.importance.log_estimate_sd`` / ``choose_n_imp`` /
``predicted_n_imp`` and ``gb.PseudoMarginal(n_imp="auto")``.

(a) the sd of log p~ measured by repeated estimates agrees with the sd known by quadrature on a
    one-observation probit problem (q is then a 1-d Gaussian and log w(f) a function of one
    variable): with N_imp = 1 exactly (sd of log w), with large N_imp through the delta method
    Var(log p~) ~ Var(w) / (N E[w]^2) -- the c / N law the choice rests on;
(b) the rule is monotone: more noise (larger c) never gives fewer draws, a larger target sd never more;
(c) bad values stop with a message naming the argument and the allowed values;
(d) ``n_imp="auto"`` runs, records its choice per chain, is reproducible, and the default stays 64.
"""

import numpy as np
import pytest

import gpbayes as gb
from gpbayes.estimators.importance import (PseudoMarginalTarget, choose_n_imp, covariance_and_factor,
                                           log_estimate_sd, predicted_n_imp)
from gpbayes.kernels import SquaredExponential
from gpbayes.likelihoods import Probit
from gpbayes.priors import Gamma, IndependentPrior

KERNEL = SquaredExponential(1)  # psi = (log tau, log sigma)
PRIOR = IndependentPrior((Gamma(1.0, 1.0), Gamma(1.0, 1.0)))
PSI = np.array([0.0, 2.0])  # K = 7.39 at one input: q is visibly not the posterior


def one_point_target(y=1.0):
    return PseudoMarginalTarget(np.zeros((1, 1)), np.array([y]), KERNEL, Probit(), PRIOR, n_imp=1)


def log_weight_moments(target, psi):
    """By Gauss-Hermite quadrature over f ~ q = N(m, s2): mean, variance and 4th central moment of
    log w(f), and E[w], E[w^2], with w = Phi(y f) N(f | 0, K) / q(f) (F&G eq. 25 with one draw)."""
    from scipy.special import log_ndtr
    from scipy.stats import norm

    K, K_chol = covariance_and_factor(target.kernel, psi, target.X)
    q = target._approximate(K, K_chol, None)
    k, m = float(K[0, 0]), float(q.m[0])
    s2 = 1.0 / (1.0 / k + float(q.w[0]))
    z, wts = np.polynomial.hermite_e.hermegauss(200)
    wts = wts / wts.sum()
    f = m + np.sqrt(s2) * z
    logw = log_ndtr(target.y[0] * f) + norm.logpdf(f, 0.0, np.sqrt(k)) - norm.logpdf(f, m, np.sqrt(s2))
    mu = np.sum(wts * logw)
    var = np.sum(wts * (logw - mu) ** 2)
    mu4 = np.sum(wts * (logw - mu) ** 4)
    ew, ew2 = np.sum(wts * np.exp(logw)), np.sum(wts * np.exp(2 * logw))
    return mu, var, mu4, ew, ew2


def test_sd_with_one_draw_is_the_sd_of_log_w():
    target = one_point_target()
    _, var, mu4, ew, _ = log_weight_moments(target, PSI)
    # the estimator is unbiased: E[w] is the exact marginal P(y f > 0), f ~ N(0, K) with unit-variance probit noise
    from scipy.stats import norm
    assert ew == pytest.approx(norm.cdf(0.0), rel=1e-8)
    n_rep = 4000
    sd, sd_ratio, _ = log_estimate_sd(target, PSI, np.random.default_rng(1), 1, n_repeats=n_rep)
    se = np.sqrt((mu4 - var ** 2) / n_rep) / (2 * np.sqrt(var))  # delta method for the sample sd
    assert abs(sd - np.sqrt(var)) < 4 * se, (sd, np.sqrt(var), se)
    # rho = 0, psi' = psi: the two estimates are independent, so the log-ratio has sd sqrt(2) sd
    assert abs(sd_ratio - np.sqrt(2 * var)) < 4 * np.sqrt(2) * se


def test_sd_with_many_draws_follows_c_over_n():
    # K = e^-1: q's variance s2 = 1 / (1/K + W) with W K <= 2/pi e^-1 < 1/3, so E[w^2] and E[w^4] are finite
    # (at PSI, K = 7.39, E[w^2] = int p^2 / q diverges: the c / N law needs a finite Var(w))
    psi = np.array([0.0, -1.0])
    target = one_point_target(-1.0)
    _, _, _, ew, ew2 = log_weight_moments(target, psi)
    c = ew2 / ew ** 2 - 1.0  # Var(w) / E[w]^2
    n_imp, n_rep = 400, 2000
    sd, _, _ = log_estimate_sd(target, psi, np.random.default_rng(2), n_imp, n_repeats=n_rep)
    expected = np.sqrt(c / n_imp)
    # sampling error of the sd ~ sd / sqrt(2 n_rep) = 1.6 %; the delta method's own error at N = 400 is far smaller
    assert sd == pytest.approx(expected, rel=0.08)
    # choose_n_imp inverts it: the smallest N with c / N <= target_sd^2
    goal = expected * np.sqrt(n_imp / 50.0)  # the sd that c / N predicts at N = 50
    choice = choose_n_imp(target, psi, np.random.default_rng(3), target_sd=goal, n_pilot=400, n_repeats=2000,
                          n_rounds=1)
    assert 40 <= choice.n_imp <= 62, choice


def test_correlated_log_ratio_is_less_noisy():
    target = one_point_target()
    sd0, r0, _ = log_estimate_sd(target, PSI, np.random.default_rng(4), 4, n_repeats=400, rho=0.0)
    sd9, r9, _ = log_estimate_sd(target, PSI, np.random.default_rng(4), 4, n_repeats=400, rho=0.99)
    assert sd9 == sd0  # the estimates at psi use the same normals
    assert r9 < 0.3 * r0  # u' = 0.99 u + 0.14 xi: the ratio shares most of its noise
    # at psi' = psi and rho = 0.99 the correlated rule needs fewer draws than the uncorrelated one
    a = choose_n_imp(target, PSI, np.random.default_rng(5), rho=0.0, target_sd=0.05, n_rounds=1)
    b = choose_n_imp(target, PSI, np.random.default_rng(5), rho=0.99, target_sd=0.05, n_rounds=1)
    assert b.n_imp < a.n_imp


def test_predicted_n_imp_is_monotone():
    cs = np.concatenate([[0.0], np.geomspace(1e-3, 1e5, 200)])
    ns = [predicted_n_imp(c, 1.2) for c in cs]
    assert all(a <= b for a, b in zip(ns, ns[1:]))
    assert ns[0] == 1 and ns[-1] == 4096  # clipped to [n_min, n_max]
    sds = np.geomspace(0.1, 5.0, 100)
    ns = [predicted_n_imp(50.0, s) for s in sds]
    assert all(a >= b for a, b in zip(ns, ns[1:]))
    assert predicted_n_imp(1.44 * 10, 1.2) == 10  # c / N = 1.44 exactly at N = 10
    assert predicted_n_imp(1.44 * 10 + 1e-6, 1.2) == 11
    # choose_n_imp with one round is predicted_n_imp of the pilot's c: the same measurement, larger target, fewer draws
    target = one_point_target()
    picks = [choose_n_imp(target, PSI, np.random.default_rng(6), target_sd=s, n_rounds=1).n_imp
             for s in (0.01, 0.02, 0.05, 0.1, 0.5)]
    assert all(a >= b for a, b in zip(picks, picks[1:])) and picks[0] > picks[-1]


@pytest.mark.parametrize("kw, words", [
    (dict(target_sd=0.0), ["target_sd", "> 0"]),
    (dict(target_sd=float("nan")), ["target_sd"]),
    (dict(n_repeats=1), ["n_repeats", ">= 2"]),
    (dict(n_pilot=0), ["n_pilot", ">= 1"]),
    (dict(n_min=10, n_max=5), ["n_min", "n_max"]),
    (dict(rho=1.0), ["rho", "[0, 1)"]),
    (dict(n_rounds=True), ["n_rounds"]),
])
def test_choose_n_imp_bad_values(kw, words):
    with pytest.raises(ValueError) as err:
        choose_n_imp(one_point_target(), PSI, np.random.default_rng(0), **kw)
    for w in words:
        assert w in str(err.value)


@pytest.mark.parametrize("value", [0, -3, 2.5, True, "fast", None])
def test_pseudo_marginal_n_imp_bad_values(value):
    with pytest.raises(ValueError) as err:
        gb.PseudoMarginal(n_imp=value)
    msg = str(err.value)
    assert "PseudoMarginal.n_imp" in msg and "'auto'" in msg and ">= 1" in msg


def test_default_n_imp_unchanged():
    assert gb.PseudoMarginal().n_imp == 64
    assert gb.PseudoMarginal(n_imp=np.int64(8)).n_imp == 8


@pytest.fixture(scope="module")
def small_model():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    return gb.GPClassifier(X, np.sin(2 * X[:, 0]) + 0.3 * rng.normal(size=40) > 0)


@pytest.mark.parametrize("rho", [0.0, 0.95])
def test_auto_runs_and_records(small_model, rho):
    kw = dict(method=gb.PseudoMarginal(n_imp="auto", rho=rho), chains=2, draws=30, n_warmup=60, seed=5,
              progress=False, cores=1)
    idata = gb.sample(small_model, **kw)
    ss = idata.sample_stats
    n = ss["tuned_n_imp"].values
    assert n.shape == (2,) and np.all((1 <= n) & (n <= 4096))
    for k in ("tuned_n_imp_sd_log_estimate", "tuned_n_imp_sd_log_ratio", "tuned_n_imp_pilot_sd"):
        assert np.all(np.isfinite(ss[k].values)) and np.all(ss[k].values > 0)
    assert np.all(ss["tuned_n_imp_at_mode"].values)
    # the recorded sd at the choice (measured there, or c / N from the last round) is at most the target 1.2
    # (sqrt(2) x 1.2 for the log-ratio when rho > 0) unless the upper bound 4096 clipped the choice
    sd = ss["tuned_n_imp_sd_log_estimate" if rho == 0.0 else "tuned_n_imp_sd_log_ratio"].values
    assert np.all((n == 4096) | (sd <= (1.2 if rho == 0.0 else np.sqrt(2) * 1.2) + 1e-9))
    again = gb.sample(small_model, **kw)
    assert np.array_equal(gb.api.psi_draws(idata).values, gb.api.psi_draws(again).values)
    assert np.array_equal(n, again.sample_stats["tuned_n_imp"].values)


def test_c_ratio_is_near_one_where_the_law_holds():
    # finite Var(w) (K = e^-1, as above): c measured at N = 400 and again at the choice agree
    target = one_point_target(-1.0)
    psi = np.array([0.0, -1.0])
    choice = choose_n_imp(target, psi, np.random.default_rng(7), target_sd=0.004, n_pilot=400, n_repeats=1000,
                          n_rounds=2)
    assert len(choice.measured) == 2 and choice.measured[1][0] != 400
    assert 0.8 < choice.c_ratio < 1.25, choice
    one = choose_n_imp(target, psi, np.random.default_rng(7), target_sd=0.004, n_pilot=400, n_repeats=1000,
                       n_rounds=1)
    assert one.c_ratio == 1.0


def test_auto_falls_back_to_the_mode_where_the_proposal_fails(small_model, monkeypatch):
    from gpbayes.estimators import importance

    real = importance.choose_n_imp
    calls = []

    def failing_at_proposal(*args, psi_proposed=None, **kw):
        calls.append(psi_proposed is not None)
        if psi_proposed is not None:
            raise ValueError("the importance estimate at psi' is not finite in every repeat")
        return real(*args, **kw)

    monkeypatch.setattr(importance, "choose_n_imp", failing_at_proposal)
    idata = gb.sample(small_model, method=gb.PseudoMarginal(n_imp="auto", rho=0.9), chains=1, draws=10,
                      n_warmup=30, seed=2, progress=False, cores=1)
    assert calls == [True, False]
    assert idata.sample_stats["tuned_n_imp_ratio_at_proposal"].values.tolist() == [0]
    assert 1 <= int(idata.sample_stats["tuned_n_imp"].values[0]) <= 4096
