"""The common chain runner: the five core samplers reproduce the pre-runner code bit for bit,
thinning, the stopping rule, progress and the ArviZ layout.

``tests/data/runners_golden.npz`` was made by ``tests/data/make_runners_golden.py``
with the code before the runner existed (commit 81aef2f: ``random_walk.run_chain``,
``hmc.run_hmc_chain``, ``nuts.run_nuts_chain``, ``slice.run_slice_chain``,
``pseudo_marginal.run_chain`` returning dicts).
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np
import pytest

from gpbayes import priors
from gpbayes_repro import io
from gpbayes.estimators import PseudoMarginalTarget
from gpbayes.kernels import SquaredExponential
from gpbayes.likelihoods import Probit
from gpbayes.mcmc import adaptation, hmc, nuts, random_walk, runner
from gpbayes.mcmc import pseudo_marginal as pm
from gpbayes.mcmc import slice as ss

GOLDEN = np.load(Path(__file__).parent / "data" / "runners_golden.npz")


@pytest.fixture(autouse=True)
def _one_blas_thread():
    """The golden arrays were made with one BLAS thread, as every workflow job runs (README, Performance):
    multi-threaded BLAS may round differently."""
    from gpbayes_repro.threads import blas_single_thread

    with blas_single_thread():
        yield
MEAN = np.array([0.5, -1.0])
PREC = np.array([[2.0, 0.6], [0.6, 1.0]])
COV = np.linalg.inv(PREC)


def logp(x, rng=None):
    d = np.asarray(x) - MEAN
    return -0.5 * d @ PREC @ d


def vg(x):
    d = np.asarray(x) - MEAN
    return -0.5 * d @ PREC @ d, -PREC @ d


def same(tag, key, value):
    want = GOLDEN[f"{tag}/{key}"]
    got = np.asarray(value)
    assert got.shape == want.shape, (tag, key)
    assert np.array_equal(got, want.astype(got.dtype) if want.dtype != got.dtype and want.dtype.kind == "b" else want), (tag, key)


def test_rwmh_bit_for_bit():
    c = random_walk.run_chain(np.random.default_rng(1), MEAN + 2, logp, np.eye(2), n_burn=200, n_draws=100)
    same("rwmh", "position", c.draws)
    same("rwmh", "log_density", c.stats["lp"])
    same("rwmh", "accepted", c.stats["accepted"])
    same("rwmh", "acceptance_prob", c.stats["acceptance_rate"])
    same("rwmh", "n_cubic", c.stats["n_cubic"])
    same("rwmh", "proposal_factor", c.params["proposal_factor"])
    same("rwmh", "proposal_scale", c.params["proposal_scale"])
    same("rwmh", "burn_acceptance", c.warmup["n_accepted"] / 200)


def test_hmc_bit_for_bit():
    mass = hmc.mass_matrix("identity", dim=2)
    # Xiong et al.'s HMC warm-up, explicit since issue 24 made Stan's windowed warm-up the default
    c = hmc.run_chain(np.random.default_rng(2), MEAN + 2, vg, mass, n_tune=60, n_draws=50, adaptation="step_size")
    same("hmc", "position", c.draws)
    same("hmc", "log_density", c.stats["lp"])
    same("hmc", "accepted", c.stats["accepted"])
    same("hmc", "acceptance_prob", c.stats["acceptance_rate"])
    same("hmc", "n_grad_evals", c.stats["n_steps"])
    same("hmc", "diverging", c.stats["diverging"])
    same("hmc", "step_size", c.params["step_size"])
    same("hmc", "tune_acceptance", c.warmup["n_accepted"] / 60)
    same("hmc", "tune_n_grad_evals", hmc.warmup_gradients(c))


@pytest.mark.parametrize("tag,seed,kw", [("nuts", 3, {"n_adapt": 0, "step_size": nuts.XIONG_STEP_SIZE}),
                                         ("nutsda", 4, {"n_adapt": 50, "step_size": None, "adaptation": "step_size"})])
def test_nuts_bit_for_bit(tag, seed, kw):
    # H&G's slice NUTS with Xiong et al.'s settings, explicit since issue 24 changed the defaults
    mass = hmc.mass_matrix("identity", dim=2)
    c = nuts.run_chain(np.random.default_rng(seed), MEAN + 2, vg, mass, n_draws=40, variant="slice", **kw)
    same(tag, "position", c.draws)
    same(tag, "log_density", c.stats["lp"])
    same(tag, "acceptance_prob", c.stats["acceptance_rate"])
    same(tag, "n_grad_evals", c.stats["n_steps"])
    same(tag, "tree_depth", c.stats["tree_depth"])
    same(tag, "step_size", c.params["step_size"])
    if tag == "nutsda":
        same(tag, "tune_n_grad_evals", hmc.warmup_gradients(c))


def test_slice_bit_for_bit():
    c = ss.run_chain(np.random.default_rng(5), MEAN + 2, logp, 1.5, n_draws=60, n_burn=10)
    for old, new in (("log_density", "lp"), ("n_density_evals", "n_likelihood"), ("n_shrinkages", "n_shrinkages"),
                     ("n_steps_out", "n_steps_out")):
        same("slice", old, c.stats[new])
    same("slice", "position", c.draws)
    c = ss.run_chain(np.random.default_rng(6), MEAN + 2, logp, 1.5, n_draws=40, step_out=0, order="random")
    same("slice_ma", "position", c.draws)
    same("slice_ma", "n_density_evals", c.stats["n_likelihood"])


@pytest.mark.parametrize("approx", ["laplace", "ep"])
def test_pseudo_marginal_bit_for_bit(approx):
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(25, 2))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=25) > 0.5, 1.0, -1.0)
    k = SquaredExponential(2, parameterisation="fg", nugget=1e-6)
    pri = priors.IndependentPrior((priors.Gamma(1.0, 1 / np.sqrt(2)), priors.Gamma(1.2, 0.2)))
    t = PseudoMarginalTarget(X, y, k, Probit(), pri, approx=approx, n_imp=4)
    c = pm.run_chain(np.random.default_rng(7), t, np.zeros(2), n_adapt=40, n_burn=10, n_draws=30,
                        proposal_cov=np.eye(2) * 0.1)
    tag = f"pm_{approx}"
    same(tag, "position", c.draws)
    for old, new in (("log_density", "lp"), ("proposal_log_density", "proposal_lp"), ("accepted", "accepted"),
                     ("acceptance_prob", "acceptance_rate"), ("n_cubic", "n_cubic")):
        same(tag, old, c.stats[new])
    for key in ("proposal_factor", "adapt_position", "adapt_log_density", "init_log_density", "adapt_n_cubic"):
        same(tag, key, c.params[key])
    same(tag, "init_n_cubic", c.warmup["n_cubic_init"])
    same(tag, "burn_n_cubic", c.warmup["n_cubic"] - c.warmup["n_cubic_init"])
    same(tag, "burn_acceptance", c.warmup["n_accepted"] / 10)


# ---------------------------------------------------------------------------
# runner behaviour
# ---------------------------------------------------------------------------
def _rw_kernel(scale=1.0):
    factor = scale * np.linalg.cholesky(COV)
    return lambda r, st: random_walk.step(r, st, logp, factor)


def test_thinning_keeps_every_kth_draw_and_adds_costs():
    def kernel(r, st):
        return ss.step(r, st, logp, 1.5)

    full = runner.run_chain(np.random.default_rng(3), kernel, ss.init(MEAN, logp), n_draws=60)
    thin = runner.run_chain(np.random.default_rng(3), kernel, ss.init(MEAN, logp), n_draws=20, thin=3)
    assert np.array_equal(thin.draws, full.draws[2::3])
    assert np.array_equal(thin.stats["lp"], full.stats["lp"][2::3])
    # counters of the skipped steps are added to the kept draw (costs stay complete)
    assert np.array_equal(thin.stats["n_likelihood"], full.stats["n_likelihood"].reshape(20, 3).sum(axis=1))


def test_record_hook_and_bad_arguments():
    rng = np.random.default_rng(0)
    c = runner.run_chain(rng, _rw_kernel(), random_walk.init(MEAN, logp, rng), n_draws=5,
                         record=lambda st, info: {"twice": 2 * st.position})
    assert np.array_equal(c.extra["twice"], 2 * c.draws)
    with pytest.raises(ValueError, match="thin"):
        runner.run_chain(rng, _rw_kernel(), random_walk.init(MEAN, logp, rng), n_draws=5, thin=0)
    with pytest.raises(ValueError, match="step function"):
        runner.run_chain(rng, None, random_walk.init(MEAN, logp, rng), n_draws=5)


def test_gaussian_moments_within_monte_carlo_error():
    """Four HMC chains on N(MEAN, COV): means within 4 MC standard errors (ESS-based)."""
    from gpbayes import diagnostics

    mass = hmc.mass_matrix("identity", dim=2)
    chains = [hmc.run_chain(np.random.default_rng(10 + i), MEAN + 1, vg, mass, n_tune=200, n_draws=1000)
              for i in range(4)]
    x = np.stack([c.draws for c in chains])
    for j in range(2):
        se = math.sqrt(COV[j, j] / diagnostics.ess(x[:, :, j], method="bulk"))
        assert abs(x[:, :, j].mean() - MEAN[j]) < 4 * se


def test_stop_rule_converges_on_a_gaussian_and_does_not_change_draws():
    rule = runner.StopRule(rhat=1.01, ess_bulk=400, check_every=200, max_draws=20_000, min_draws=200)
    rngs = [np.random.default_rng(20 + i) for i in range(4)]
    states = [random_walk.init(MEAN + 3 * (i - 1.5), logp, r) for i, r in enumerate(rngs)]
    chains = runner.run_chains(rngs, _rw_kernel(2.38 / math.sqrt(2)), states, stop=rule, n_warmup=300)
    assert all(c.stopped == "converged" for c in chains)
    n = chains[0].n_draws
    assert n % 200 == 0 and n < 20_000
    # the same chain run alone for the same length gives the same draws
    r0 = np.random.default_rng(20)
    alone = runner.run_chain(r0, _rw_kernel(2.38 / math.sqrt(2)), random_walk.init(MEAN - 4.5, logp, r0),
                             n_draws=n, n_warmup=300)
    assert np.array_equal(alone.draws, chains[0].draws)


def test_stop_rule_budget():
    rule = runner.StopRule(rhat=1.0001, ess_bulk=1e9, check_every=50, max_draws=150)
    rngs = [np.random.default_rng(i) for i in range(2)]
    states = [random_walk.init(MEAN, logp, r) for r in rngs]
    chains = runner.run_chains(rngs, _rw_kernel(), states, stop=rule)
    assert [c.n_draws for c in chains] == [150, 150]
    assert chains[0].stopped.startswith("budget")


def test_progress_logs_and_does_not_touch_the_chain(caplog):
    rng = np.random.default_rng(1)
    plain = runner.run_chain(np.random.default_rng(1), _rw_kernel(), random_walk.init(MEAN, logp, rng), n_draws=100)
    prog = runner.Progress("test chain", bar=False)
    with caplog.at_level(logging.INFO, logger="gpbayes"):
        logged = runner.run_chain(np.random.default_rng(1), _rw_kernel(), random_walk.init(MEAN, logp, rng),
                                  n_draws=100, callback=prog)
    assert np.array_equal(plain.draws, logged.draws)
    lines = [r.getMessage() for r in caplog.records if "test chain" in r.getMessage()]
    assert 15 <= len(lines) <= 25 and "100/100" in lines[-1] and "ETA" in lines[0]


def test_windowed_adaptation_learns_the_scales_of_a_gaussian():
    scales = np.array([0.1, 5.0])

    def vg2(x):
        z = x / scales
        return -0.5 * z @ z, -z / scales

    def make_step(eps, mass):
        return lambda r, st: hmc.step(r, st, vg2, eps, mass, 10)

    def make_mass(draws):
        return hmc.mass_matrix("diagonal", covariance=np.diag(np.var(draws, axis=0)))

    mass0 = hmc.mass_matrix("identity", dim=2)
    ad = adaptation.WindowedAdaptation(
        make_step, make_mass, mass0, n_warmup=600,
        find_step_size=lambda r, st, m: hmc.find_reasonable_step_size(r, st, vg2, m), target_accept=0.8)
    c = runner.run_chain(np.random.default_rng(5), None, hmc.init(np.ones(2), vg2), n_draws=500, n_warmup=600,
                         adapt=ad)
    learned = np.sqrt(c.params["mass"].inv_diag)  # M^-1 = the estimated posterior variances
    assert np.allclose(learned, scales, rtol=0.35)
    assert np.std(c.draws[:, 1]) == pytest.approx(5.0, rel=0.3)


def test_inference_groups_open_with_arviz(tmp_path):
    az = pytest.importorskip("arviz")
    mass = hmc.mass_matrix("identity", dim=2)
    chains = [hmc.run_chain(np.random.default_rng(i), MEAN, vg, mass, n_tune=30, n_draws=40) for i in range(2)]
    groups = io.to_inference_groups(chains, var_name="psi", dims=("param",), coords={"param": ["a", "b"]},
                                    observed_data={"y": np.arange(3.0)})
    path = io.write_inference_data(groups, tmp_path / "idata.nc")
    idata = az.from_netcdf(path)
    assert idata.posterior["psi"].shape == (2, 40, 2)
    assert set(idata.sample_stats.data_vars) >= {"lp", "acceptance_rate", "diverging", "n_steps", "n_cubic"}
    assert idata.posterior.attrs["inference_library"] == "gpbayes"
    assert "created_at" in idata.posterior.attrs
    summary = az.summary(idata)
    assert list(summary.index) == ["psi[a]", "psi[b]"]
    assert np.array_equal(idata.posterior["psi"].values[1], chains[1].draws)
    assert idata.sample_stats.attrs["warmup_n_iterations"] == 30


def test_numerical_trouble_is_recorded_per_draw_and_in_the_warmup():
    """Jitter (with its size), non-converged approximations and failed estimates reach Chain.stats."""
    from gpbayes import linalg

    singular = np.ones((3, 3))  # rank 1: needs jitter

    def step(rng, state):
        if state % 2:
            linalg.cholesky(singular, name="test")
        if state % 3 == 0:
            linalg.record_not_converged()
        if state == 4:
            linalg.record_failed_estimate()
        return state + 1, {"accepted": True}

    c = runner.run_chain(np.random.default_rng(0), step, 0, n_draws=6, n_warmup=2,
                         position=lambda s: np.array([float(s)]), lp=lambda s: 0.0)
    # warm-up steps run at states 0, 1; kept draws at states 2..7
    assert c.warmup["n_jitter"] == 1 and c.warmup["n_not_converged"] == 1
    np.testing.assert_array_equal(c.stats["n_jitter"], [0, 1, 0, 1, 0, 1])
    assert np.all(c.stats["max_jitter"][1::2] > 0) and np.all(c.stats["max_jitter"][::2] == 0)
    np.testing.assert_array_equal(c.stats["n_not_converged"], [0, 1, 0, 0, 1, 0])
    np.testing.assert_array_equal(c.stats["n_failed_estimates"], [0, 0, 1, 0, 0, 0])
    # thinning adds the counts and keeps the largest jitter
    t = runner.run_chain(np.random.default_rng(0), step, 0, n_draws=3, thin=2,
                         position=lambda s: np.array([float(s)]), lp=lambda s: 0.0)
    np.testing.assert_array_equal(t.stats["n_jitter"], [1, 1, 1])
    np.testing.assert_array_equal(t.stats["n_not_converged"], [1, 1, 0])  # steps at states (0,1), (2,3), (4,5)
    assert np.all(t.stats["max_jitter"] > 0)


def test_progress_over_several_chains_counts_warmup_and_does_not_overflow():
    """One bar over all chains: 3 chains x (10 warm-up + 20 draws) report 90 of 90 ("403it" for 3 x 400 before)."""
    import gpbayes as gb

    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(15, 1))
    reg = gb.GPRegressor(X, np.sin(2 * X[:, 0]) + 0.1 * rng.standard_normal(15), ard=False)
    for bar in (False, True):
        prog = runner.Progress("sampling", bar=bar, n_chains=3)
        gb.sample(reg, "slice", chains=3, draws=20, n_warmup=10, seed=1, progress=prog)
        assert prog.count == prog.total == 3 * (10 + 20) and prog.chain == 2
        if bar:
            assert prog._tqdm.n == prog._tqdm.total == 90
            prog.close()
    # under a stopping rule the chains advance in blocks: still one count per iteration, never over the total
    prog = runner.Progress("sampling", bar=False, n_chains=2)
    gb.sample(reg, "slice", chains=2, draws=60, n_warmup=10, seed=1, progress=prog,
              until_converged={"check_every": 20, "max_draws": 60, "ess_bulk": 1e9})
    assert prog.count == prog.total == 2 * (10 + 60)
    # pseudo-marginal MH: the kept phase is counted (its adaptive phase runs inside pseudo_marginal.run_chain)
    clf = gb.GPClassifier(X, X[:, 0] > 0)
    prog = runner.Progress("sampling", bar=False, n_chains=2)
    gb.sample(clf, "pseudo-marginal", n_imp=2, chains=2, draws=5, n_warmup=5, seed=1, progress=prog)
    assert prog.count == prog.total == 2 * 5


class _InterruptAt:
    """A random-walk kernel that raises KeyboardInterrupt (as Ctrl-C does) at its ``k``-th call."""

    def __init__(self, k: int):
        self.k, self.calls = k, 0
        self.kernel = _rw_kernel()

    def __call__(self, rng, state):
        self.calls += 1
        if self.calls == self.k:
            raise KeyboardInterrupt
        return self.kernel(rng, state)


def test_an_interrupt_returns_the_draws_so_far():
    """Ctrl-C at step 31 (10 warm-up + 20 kept + 1): Interrupted carries the 20 draws, equal to an
    uninterrupted run's."""
    full = runner.run_chain(np.random.default_rng(3), _rw_kernel(), random_walk.init(MEAN, logp, None),
                            n_draws=50, n_warmup=10)
    with pytest.raises(runner.Interrupted) as err:
        runner.run_chain(np.random.default_rng(3), _InterruptAt(31), random_walk.init(MEAN, logp, None), n_draws=50,
                         n_warmup=10)
    assert isinstance(err.value, KeyboardInterrupt)
    (part,) = err.value.chains
    assert part.stopped == "interrupted" and part.n_draws == 20
    assert np.array_equal(part.draws, full.draws[:20]) and np.array_equal(part.stats["lp"], full.stats["lp"][:20])
    assert part.warmup["n_iterations"] == 10
    # interrupted in warm-up: no draw
    with pytest.raises(runner.Interrupted) as err:
        runner.run_chain(np.random.default_rng(3), _InterruptAt(5), random_walk.init(MEAN, logp, None), n_draws=50,
                         n_warmup=10)
    assert err.value.chains[0].draws.size == 0
    # several chains in blocks: every chain's draws so far
    rule = runner.StopRule(rhat=1.0001, ess_bulk=1e9, check_every=10, max_draws=100)
    rngs = [np.random.default_rng(i) for i in range(2)]
    kernel = _InterruptAt(2 * 5 + 10 + 10 + 4)  # warm-up 5 each, one block of 10 each, then 3 more steps of chain 0
    with pytest.raises(runner.Interrupted) as err:
        runner.run_chains(rngs, kernel, [random_walk.init(MEAN, logp, r) for r in rngs], stop=rule, n_warmup=5)
    assert [c.n_draws for c in err.value.chains] == [13, 10]


def test_after_an_interrupt_the_api_keeps_the_chains_that_hold_the_most_draws():
    from gpbayes.api import _kept

    def chain(n):
        return runner.Chain(np.arange(2.0 * n).reshape(n, 2) if n else np.zeros((0, 0)), {"lp": np.zeros(n)}, {}, {},
                            None, "interrupted", {"v": np.zeros((n, 3))})

    kept, message = _kept([chain(50), chain(30), chain(0)])
    assert [c.n_draws for c in kept] == [30, 30] and "2 chain(s) of 30 draws" in message  # 60 > 50
    assert kept[0].extra["v"].shape == (30, 3) and kept[0].stats["lp"].shape == (30,)
    kept, _ = _kept([chain(50), chain(10), chain(0)])
    assert [c.n_draws for c in kept] == [50]
    assert _kept([chain(0)])[0] == []
