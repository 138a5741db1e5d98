"""Ctrl-C during gb.sample returns the draws made so far, flagged ``interrupted`` (as PyMC does)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent("""
    import signal
    import warnings
    # a pytest-xdist worker ignores SIGINT and a child inherits an ignored signal (Python then leaves it
    # ignored): give the child the default handler, as a user's Python process has
    signal.signal(signal.SIGINT, signal.default_int_handler)
    import numpy as np
    import gpbayes as gb
    from gpbayes.mcmc.runner import Progress

    class Signal(Progress):  # tells the parent that the kept draws have begun
        def __call__(self, iteration, n_total, state, info):
            super().__call__(iteration, n_total, state, info)
            if self.count == 40:
                print("sampling", flush=True)

    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(15, 1))
    reg = gb.GPRegressor(X, np.sin(2 * X[:, 0]) + 0.1 * rng.standard_normal(15), ard=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        idata = gb.sample(reg, "slice", chains=2, draws=10**7, n_warmup=10, seed=1, cores=1,
                          progress=Signal(bar=False, n_chains=2))
    post = idata.posterior
    print(post.attrs["interrupted"], idata.sample_stats.attrs["interrupted"], post.sizes["chain"], post.sizes["draw"],
          int(np.isfinite(gb.api.psi_draws(idata).values).all()))
    print([str(w.message) for w in caught if "interrupted" in str(w.message)])
""")


def _interrupted_child(source: str) -> tuple[str, str]:
    """Run ``source`` in a child Python, send it SIGINT once it prints "sampling", return its last two lines."""
    proc = subprocess.Popen([sys.executable, "-c", source], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.strip() == "sampling", (line, proc.stderr.read() if proc.poll() is not None else "")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    flags, warned = out.strip().splitlines()[-2:]
    return flags, warned


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process")
def test_sigint_during_sample_returns_a_partial_inference_data():
    flags, warned = _interrupted_child(CHILD)
    interrupted, stats_flag, n_chains, n_draws, finite = map(int, flags.split())
    # chain 0 was interrupted after >= 30 kept draws; chain 1 never started: one chain is returned
    assert (interrupted, stats_flag, n_chains, finite) == (1, 1, 1, 1) and n_draws >= 30
    assert "sampling interrupted (Ctrl-C): returning 1 chain(s)" in warned


PARALLEL_CHILD = textwrap.dedent("""
    import signal
    import warnings
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as in CHILD: a user's process has it
    import numpy as np
    import gpbayes as gb
    from gpbayes.mcmc.runner import Progress

    class Signal(Progress):  # the chains report from their worker processes through ``advance``
        def advance(self, chain, n_new, n_total, *args):
            super().advance(chain, n_new, n_total, *args)
            if len(getattr(self, "_per_chain", {})) == 3 and min(d for d, _ in self._per_chain.values()) > 40 \\
                    and not getattr(self, "said", False):
                self.said = True
                print("sampling", flush=True)

    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(15, 1))
    reg = gb.GPRegressor(X, np.sin(2 * X[:, 0]) + 0.1 * rng.standard_normal(15), ard=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        idata = gb.sample(reg, "slice", chains=3, draws=10**7, n_warmup=10, seed=1, cores=3,
                          progress=Signal(bar=False, n_chains=3))
    post = idata.posterior
    print(post.attrs["interrupted"], post.attrs["cores"], post.sizes["chain"], post.sizes["draw"],
          int(np.isfinite(gb.api.psi_draws(idata).values).all()))
    print([str(w.message) for w in caught if "interrupted" in str(w.message)])
""")


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process")
def test_sigint_with_chains_in_processes_returns_every_chain_so_far():
    """cores=3: the three chains run in worker processes (which ignore SIGINT); Ctrl-C in the calling
    process stops them through the stop event and their draws so far come back, cut to a common
    length, flagged interrupted -- no hang, no lost chain."""
    flags, warned = _interrupted_child(PARALLEL_CHILD)
    interrupted, cores, n_chains, n_draws, finite = map(int, flags.split())
    assert (interrupted, cores, finite) == (1, 3, 1) and n_draws >= 30
    # all three chains came back from their workers with their draws so far; gb.sample keeps the chains and
    # common length holding the most draws (PyMC's choice), so a chain far behind the others may be dropped
    import re

    lengths = [int(x) for x in re.search(r"draws per chain when interrupted: \[([0-9, ]+)\]", warned).group(1).split(",")]
    assert len(lengths) == 3 and min(lengths) >= 30, lengths
    assert f"returning {n_chains} chain(s) of {n_draws} draws" in warned


def test_an_interrupt_in_pseudo_marginal_keeps_the_draws_so_far(monkeypatch):
    """Ctrl-C (a KeyboardInterrupt from inside the MH step) after 7 kept draws of chain 0: the result is
    that chain's first 7 draws, as an uninterrupted run gives them, flagged interrupted, with a warning."""
    import numpy as np

    import gpbayes as gb
    from gpbayes.mcmc import pseudo_marginal, random_walk

    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(15, 2))
    clf = gb.GPClassifier(X, X[:, 0] + 0.3 * rng.standard_normal(15) > 0)
    kw = dict(n_imp=2, chains=2, draws=30, n_warmup=5, seed=3, progress=False, cores=1)  # monkeypatched: in-process
    full = gb.sample(clf, "pseudo-marginal", **kw)
    pm_step, step, calls = pseudo_marginal.step, random_walk.step, [0]

    def interrupted_step(*args, **kwargs):
        calls[0] += 1
        if calls[0] == 8:  # the PM-MH kernel (pseudo_marginal.step, after both adaptive phases): chain 0's 8th step
            raise KeyboardInterrupt
        return pm_step(*args, **kwargs)

    monkeypatch.setattr(pseudo_marginal, "step", interrupted_step)
    with pytest.warns(RuntimeWarning, match=r"returning 1 chain\(s\) of 7 draws"):
        part = gb.sample(clf, "pseudo-marginal", **kw)
    assert part.posterior.attrs["interrupted"] == 1 and part.sample_stats.attrs["interrupted"] == 1
    np.testing.assert_array_equal(gb.api.psi_draws(part).values, gb.api.psi_draws(full).values[:1, :7])
    assert part.sample_stats["warmup_n_cubic"].values[0] == full.sample_stats["warmup_n_cubic"].values[0]
    calls[0] = 0

    def early(*args, **kwargs):
        calls[0] += 1
        if calls[0] == 3:
            raise KeyboardInterrupt
        return step(*args, **kwargs)

    monkeypatch.setattr(random_walk, "step", early)
    with pytest.raises(KeyboardInterrupt, match="no draw was kept"):
        gb.sample(clf, "pseudo-marginal", **kw)
