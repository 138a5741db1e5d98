"""gb.sample(..., cores=k): chains in worker processes with the draws of the sequential run (issue 24 §3)."""

from __future__ import annotations

import dataclasses
import logging

import numpy as np
import pytest

import gpbayes as gb
from gpbayes import methods, parallel
from gpbayes.mcmc import runner


def _data(n=20, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 2))
    return X, np.sin(2 * X[:, 0]) + 0.1 * rng.standard_normal(n)


def _same(a, b):
    """Every array of ``posterior``, ``unconstrained_posterior`` and ``sample_stats`` equal bit for bit
    (NaN where NaN), except the measured wall times."""
    for group in ("posterior", "unconstrained_posterior", "sample_stats"):
        ga, gb_ = getattr(a, group), getattr(b, group)
        assert set(ga.data_vars) == set(gb_.data_vars), group
        for k in ga.data_vars:
            if "wall_time" in k:
                continue
            x, y = ga[k].values, gb_[k].values
            np.testing.assert_array_equal(x, y, err_msg=f"{group}.{k}")


@pytest.mark.parametrize("which", ["nuts", "pseudo-marginal", "surr"])
def test_chains_in_processes_are_the_sequential_chains_bit_for_bit(which):
    """NUTS (the exact marginal: the MAP from chain 0's generator is shared, ``Method.prepare``), pseudo-
    marginal MH (adaptive phase and noisy estimates per chain) and SURR Gibbs: 3 chains on 2 workers give
    the draws and statistics of cores=1 exactly."""
    X, y = _data()
    if which == "nuts":
        model, kw = gb.GPRegressor(X, y), {}
    else:
        model, kw = gb.GPClassifier(X, y > 0), ({"n_imp": 4} if which == "pseudo-marginal" else {})
    run = dict(chains=3, draws=25, n_warmup=20, seed=5, progress=False, **kw)
    seq = gb.sample(model, which, cores=1, **run)
    par = gb.sample(model, which, cores=2, **run)
    assert seq.posterior.attrs["cores"] == 1 and par.posterior.attrs["cores"] == 2
    assert par.posterior.sizes["chain"] == 3 and par.posterior.sizes["draw"] == 25
    _same(seq, par)
    # the chains differ from each other (each its own stream), so equality above is not vacuous
    psi = gb.api.psi_draws(par).values
    assert not np.array_equal(psi[0], psi[1])


@dataclasses.dataclass(frozen=True)
class _FailsInChain1(methods.RandomWalkMH, register=False):
    """Random-walk MH whose chain 1 (told by its generator's spawn key) fails while building its start."""

    def chain_specs(self, model, rngs, n_warmup, prepared=None):
        if any(r.bit_generator.seed_seq.spawn_key == (1,) for r in rngs):
            raise FloatingPointError("the start of this chain overflowed")
        return super().chain_specs(model, rngs, n_warmup, prepared)


def test_an_error_in_a_worker_is_raised_with_its_chain_number():
    X, y = _data()
    with pytest.raises(FloatingPointError, match="the start of this chain overflowed") as err:
        gb.sample(gb.GPRegressor(X, y), _FailsInChain1(), chains=3, draws=5, n_warmup=5, cores=2, progress=False)
    assert any("raised in chain 1" in note for note in err.value.__notes__)
    assert "Traceback" in str(err.value.__cause__) and "chain_specs" in str(err.value.__cause__)


def test_progress_shows_every_chain_and_counts_warmup(caplog):
    X, y = _data()
    prog = runner.Progress("sampling", bar=False, n_chains=3)
    with caplog.at_level(logging.INFO, logger="gpbayes"):
        gb.sample(gb.GPRegressor(X, y), "rwmh", chains=3, draws=40, n_warmup=30, cores=2, progress=prog)
    assert {c: d for c, d in prog._per_chain.items()} == {0: [70, 70], 1: [70, 70], 2: [70, 70]}
    assert prog.count == prog.total == 210
    last = [r.getMessage() for r in caplog.records if "iteration" in r.getMessage()][-1]
    assert "210/210" in last and all(f"chain {c}: 70/70" in last for c in range(3))


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True])
def test_cores_must_be_a_positive_integer(bad):
    X, y = _data()
    with pytest.raises(ValueError, match=r"cores must be None \(the cores available\) or an integer >= 1"):
        gb.sample(gb.GPRegressor(X, y), "rwmh", chains=2, draws=5, cores=bad, progress=False)


def test_default_cores_is_the_cores_available_capped_by_the_chains():
    assert parallel.resolve_cores(None, 1) == 1
    assert parallel.resolve_cores(None, 64) == min(parallel.available_cores(), 64)
    assert parallel.resolve_cores(8, 3) == 3 and parallel.resolve_cores(2.0, 3) == 2


def test_until_converged_in_processes_gives_the_sequential_chains_and_verdict():
    """Under a StopRule the workers advance in blocks and this process decides after each block: the
    same draws, the same stopping block and reason as cores=1 -- pseudo-marginal MH stopped by
    convergence (after 250 of at most 400 draws), random-walk MH on the exact marginal (a prepared
    MAP) by the draws budget."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(30, 1))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.standard_normal(30)
    rule = {"check_every": 50, "ess_bulk": 50, "rhat": 1.1, "min_draws": 50}
    clf = gb.GPClassifier(X, y > 0, ard=False)
    runs = [gb.sample(clf, "pseudo-marginal", n_imp=4, chains=3, draws=400, n_warmup=50, seed=4, progress=False,
                      cores=cores, until_converged=rule) for cores in (1, 2)]
    assert [r.posterior.attrs["cores"] for r in runs] == [1, 2]
    _same(*runs)
    assert [r.sample_stats.attrs["stopped"] for r in runs] == ["converged"] * 2
    assert runs[0].posterior.sizes["draw"] == 250
    reg = gb.GPRegressor(*_data())
    short = [gb.sample(reg, "rwmh", chains=3, n_warmup=30, seed=4, progress=False, cores=cores,
                       until_converged={**rule, "ess_bulk": 10**6}, budget=100) for cores in (1, 2)]
    _same(*short)
    assert [s.sample_stats.attrs["stopped"] for s in short] == ["budget: 100 draws"] * 2


def test_runs_in_this_process_where_processes_do_not_apply():
    """Importance sampling, point estimates and methods whose chains are not declared independent run
    in the calling process: attrs['cores'] says 1."""
    X, y = _data()
    reg = gb.GPRegressor(X, y)
    weighted = gb.sample(reg, "amis", n_iterations=3, n_per_iteration=20, n_resample=50, cores=2, progress=False)
    assert weighted.posterior.attrs["cores"] == 1
    assert not methods.Method.independent_chains and not gb.AMIS.independent_chains


class _CtrlC(runner.Progress):
    """Raises KeyboardInterrupt in the calling process (as Ctrl-C would) once ``n_running`` chains have
    reported at least ``after`` iterations each."""

    def __init__(self, after, n_running, **kw):
        super().__init__(**kw)
        self.after, self.n_running, self.pressed = after, n_running, False

    def advance(self, chain, n_new, n_total, *args):
        super().advance(chain, n_new, n_total, *args)
        done = sorted((d for d, _ in self._per_chain.values()), reverse=True)
        if len(done) >= self.n_running and done[self.n_running - 1] >= self.after and not self.pressed:
            self.pressed = True  # one Ctrl-C
            raise KeyboardInterrupt


@pytest.mark.parametrize("blocks", [False, True])
def test_an_interrupt_in_the_calling_process_stops_the_workers_and_keeps_every_chain(blocks):
    """Ctrl-C while the workers sample: every chain's draws so far come back, cut to a common length,
    flagged interrupted, and they are the first draws of the uninterrupted chains.  Fixed length: 3
    chains on 2 workers, chains 0 and 1 running, chain 2 not begun -> 2 chains; blocks under
    until_converged: all 3 advance together -> 3 chains."""
    X, y = _data()
    reg = gb.GPRegressor(X, y)
    kw = dict(chains=3, n_warmup=20, seed=6, cores=2)
    if blocks:
        kw.update(until_converged={"check_every": 20, "ess_bulk": 10**6}, budget=10**6)
    else:
        kw.update(draws=10**6)
    n_running = 3 if blocks else 2
    with pytest.warns(RuntimeWarning, match=r"sampling interrupted \(Ctrl-C\): returning \d chain\(s\)") as caught:
        part = gb.sample(reg, "rwmh", progress=_CtrlC(60, n_running, bar=False, n_chains=3), **kw)
    import re

    message = next(str(w.message) for w in caught if "interrupted" in str(w.message))
    lengths = [int(x) for x in re.search(r"when interrupted: \[([0-9, ]+)\]", message).group(1).split(",")]
    # every running chain came back with its draws so far (fixed length: chain 2 had not begun in its worker)
    assert len(lengths) == n_running and min(lengths) >= 20, lengths
    k, n = part.posterior.sizes["chain"], part.posterior.sizes["draw"]
    assert part.posterior.attrs["interrupted"] == 1 and n >= 20 and 1 <= k <= n_running
    # the kept chains (api._kept: the chains and common length holding the most draws) are the first n draws
    # of chains of the uninterrupted run
    full = gb.api.psi_draws(gb.sample(reg, "rwmh", chains=3, n_warmup=20, seed=6, cores=1, draws=n,
                                      progress=False)).values
    got = gb.api.psi_draws(part).values
    for chain in got:
        assert any(np.array_equal(chain, full[c]) for c in range(n_running))
