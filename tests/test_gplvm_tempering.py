"""Replica exchange of the supervised GPLVM's joint Gibbs sampler (``gpbayes.gplvm.joint.tempered_step``).

Checked against answers known independently:
(a) one replica at inverse temperature b targets p(psi) N(V; 0, I) p(Y | Z, psi)^b: its moments match
    Gauss-Hermite quadrature of that tempered density on the N = 2 toy (``gplvm_quadrature``);
(b) the b = 1 replica of a two-temperature ladder, with its swaps, matches the posterior's quadrature,
    and the hot replica its tempered quadrature, within Monte Carlo error (ESS-based standard errors);
(c) a one-temperature ladder is the plain Gibbs chain, bit for bit;
(d) bad ladders are refused.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from gplvm_quadrature import Q_MEAN, Q_PRIOR, Q_X, Q_Y, quadrature_moments, z_scores
from gpbayes.gplvm import SupervisedGPLVM, joint
from gpbayes.mcmc import runner

# the cheap moves (the slice move costs 4x more on the toy; its tempered form is the same b-scaled ratio
# as the block move's and is exercised in (c) and the case-study runs)
MOVES = ("ess", "block", "centred", "scale")
BETAS = (1.0, 0.4)


def _model():
    return SupervisedGPLVM(Q_X, Q_Y, 1, 2)


@functools.lru_cache(maxsize=None)
def _ladder_chains(betas, n_draws=3000):
    """(replica, chain, draw, p) psi draws of every replica of two ladder chains."""
    model = _model()
    out = []
    for seed in (21, 22):
        spec = joint.tempered_chain_spec(model, Q_PRIOR, Q_MEAN, np.zeros((2, 1)), betas, n_warmup=500,
                                         moves=MOVES)
        reps = []

        def record(st, info, reps=reps):
            reps.append(np.stack([r.psi for r in st.replicas]))
            return {}

        spec = runner.ChainSpec(spec.init, spec.step, spec.n_warmup, spec.adapt, record=record)
        runner.run_spec(np.random.default_rng(seed), spec, n_draws=n_draws)
        out.append(np.stack(reps))  # (draw, replica, p)
    return np.stack(out).transpose(2, 0, 1, 3)


def _z_scores(draws, inverse_temperature):
    zs, _, report = z_scores(draws, inverse_temperature)
    return zs, report


def test_tempered_quadrature_differs():
    """Not vacuous: the tempered target's moments differ from the posterior's (theta_S's mean by > 0.05)."""
    m1, _ = quadrature_moments()
    mb, _ = quadrature_moments(inverse_temperature=BETAS[1])
    assert np.max(np.abs(m1 - mb)) > 0.05, (m1, mb)


@pytest.mark.parametrize("replica", [0, 1], ids=["cold", "hot"])
def test_replicas_match_their_quadrature(replica):
    draws = _ladder_chains(BETAS)[replica]
    zs, report = _z_scores(draws, BETAS[replica])
    assert np.max(np.abs(zs)) < 4.0, report
    if replica == 1:  # the hot replica's moments are the tempered ones, not the posterior's
        z_post, _ = _z_scores(draws, 1.0)
        assert np.max(np.abs(z_post)) > 6.0, report


def test_one_temperature_is_the_gibbs_chain():
    model = _model()
    a = joint.gibbs_chain_spec(model, Q_PRIOR, Q_MEAN, np.zeros((2, 1)), n_warmup=50)
    b = joint.tempered_chain_spec(model, Q_PRIOR, Q_MEAN, np.zeros((2, 1)), [1.0], n_warmup=50)
    ra = runner.run_spec(np.random.default_rng(3), a, n_draws=60)
    rb = runner.run_spec(np.random.default_rng(3), b, n_draws=60)
    assert np.array_equal(ra.draws, rb.draws)
    assert np.array_equal(np.stack(ra.extra["Z"]), np.stack(rb.extra["Z"]))


def test_swaps_happen():
    model = _model()
    spec = joint.tempered_chain_spec(model, Q_PRIOR, Q_MEAN, np.zeros((2, 1)), BETAS, n_warmup=20, moves=MOVES)
    ch = runner.run_spec(np.random.default_rng(4), spec, n_draws=200)
    sw = np.stack(ch.extra["swap_accepted"])[:, 0]
    assert 0.05 < np.nanmean(sw) < 1.0
    assert np.isnan(sw[1::2]).all() or np.isnan(sw[0::2]).all()  # the pair is offered every other sweep


@pytest.mark.parametrize("betas", [[0.5, 0.2], [1.0, 1.0], [1.0, 0.5, 0.7], [1.0, 0.0], [], [[1.0]]])
def test_bad_ladders_are_refused(betas):
    with pytest.raises(ValueError, match="betas"):
        joint.tempered_chain_spec(_model(), Q_PRIOR, Q_MEAN, np.zeros((2, 1)), betas, n_warmup=0)


def test_bad_inverse_temperature_is_refused():
    model = _model()
    state = joint.gibbs_init(model, Q_PRIOR, Q_MEAN, np.zeros((2, 1)))
    with pytest.raises(ValueError, match="inverse_temperature"):
        joint.gibbs_step(np.random.default_rng(0), state, model, Q_PRIOR, 0.1 * np.eye(4), inverse_temperature=1.5)


@pytest.fixture(scope="module")
def gplvm_model():
    import gpbayes as gb

    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (12, 1))
    return gb.GPLVMRegressor(X, np.sin(X) + 0.1 * rng.standard_normal((12, 3)), latent_dim=2, n_inducing=4)


def test_method_with_a_ladder(gplvm_model):
    """``GPLVMJointGibbs(inverse_temperatures=...)`` through ``gb.sample``: the swap record in sample_stats,
    the same chain bit for bit for the same seed, and the one-temperature default unchanged."""
    import gpbayes as gb

    method = gb.methods.GPLVMJointGibbs(inverse_temperatures=(1.0, 0.5, 0.25))
    kw = {"chains": 2, "draws": 20, "n_warmup": 10, "seed": 3, "progress": False}
    with pytest.warns(gb.NotConvergedWarning):
        a = gb.sample(gplvm_model, method, **kw)
    with pytest.warns(gb.NotConvergedWarning):
        b = gb.sample(gplvm_model, method, **kw)
    swaps = a.sample_stats["swap_accepted"]
    assert swaps.shape == (2, 20, 2)
    ladders = np.reshape(a.sample_stats.attrs["inverse_temperatures"], (2, 3))  # chain by chain, adapted
    assert np.all(ladders[:, 0] == 1.0) and np.all(ladders[:, -1] == 0.25) and np.all(np.diff(ladders) < 0)
    assert 0.0 < float(np.nanmean(swaps)) <= 1.0
    for name in a.posterior.data_vars:
        assert np.array_equal(a.posterior[name].values, b.posterior[name].values)
    with pytest.warns(gb.NotConvergedWarning):
        plain = gb.sample(gplvm_model, gb.methods.GPLVMJointGibbs(), **kw)
    assert "swap_accepted" not in plain.sample_stats


@pytest.mark.parametrize("bad", [(0.5,), (1.0, 1.0), (1.0, 0.5, 0.6), (1.0, 0.0), (), "1.0", 3, ("a",)])
def test_method_refuses_bad_ladders(bad):
    import gpbayes as gb

    with pytest.raises((TypeError, ValueError), match="inverse_temperatures"):
        gb.methods.GPLVMJointGibbs(inverse_temperatures=bad)
    with pytest.raises(TypeError, match="adapt_ladder"):
        gb.methods.GPLVMJointGibbs(adapt_ladder="yes")


def test_respaced_ladder():
    """Syed et al. (2022)'s schedule: equal rejection rates leave the ladder as it is; the end points stay;
    temperatures move into the pair that rejects most."""
    b = np.array([1.0, 0.65, 0.42, 0.27, 0.18, 0.12])
    np.testing.assert_allclose(joint.respace_ladder(b, [0.4] * 5), b, rtol=1e-12)
    new = joint.respace_ladder(b, [0.1, 0.1, 0.9, 0.1, 0.1])
    assert new[0] == 1.0 and new[-1] == 0.12 and np.all(np.diff(new) < 0)
    assert np.sum((new < 0.42) & (new > 0.27)) >= 2  # the hard pair (0.42, 0.27) now holds interior points
    # equal cumulative rejection between the new neighbours (piecewise-linear Lambda)
    lam = lambda x: np.interp(x, b[::-1], np.concatenate([[0.0], np.cumsum([0.1, 0.1, 0.9, 0.1, 0.1][::-1])]))  # noqa: E731
    np.testing.assert_allclose(np.diff(lam(new[::-1])), lam(1.0) / 5, rtol=1e-10)


def test_adapted_ladder_keeps_the_cold_replica_exact():
    """With the ladder respaced in warm-up the kept chain is a fixed-ladder chain: its b = 1 replica's
    moments match the posterior's quadrature."""
    model = _model()
    draws = []
    for seed in (31, 32):
        spec = joint.tempered_chain_spec(model, Q_PRIOR, Q_MEAN, np.zeros((2, 1)), (1.0, 0.6, 0.3), n_warmup=400,
                                         moves=MOVES, adapt_ladder=True)
        ch = runner.run_spec(np.random.default_rng(seed), spec, n_draws=3000)
        assert ch.params["inverse_temperatures"][0] == 1.0 and ch.params["inverse_temperatures"][-1] == 0.3
        assert ch.params["inverse_temperatures"][1] != 0.6  # respaced
        draws.append(ch.draws)
    zs, report = _z_scores(np.stack(draws), 1.0)
    assert np.max(np.abs(zs)) < 4.0, report
