"""Progress a person sees (issue 41 §7): the tqdm bar stays after the run; with stderr not a terminal a
line every ~10 s (here: every 0 s) with the iterations done of the total, warm-up included, the
divergences after warm-up and the elapsed time; chains in processes under a stopping rule count their
warm-up and blocks as they run.  Every stream here is a StringIO: nothing reaches the test's stderr."""

from __future__ import annotations

import contextlib
import io
import types
import warnings

import numpy as np
import pytest

import gpbayes as gb
from gpbayes import api, parallel
from gpbayes.mcmc import runner


def _info(diverging=False, acceptance=0.8):
    return types.SimpleNamespace(diverging=diverging, acceptance_prob=acceptance)


class _Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("stream", [io.StringIO, _Terminal])
def test_the_bar_stays_when_the_run_ends(stream):
    buf = stream()
    prog = runner.Progress("sampling", bar=True, file=buf, n_warmup=2)
    for i in range(5):
        prog(i, 5, None, _info(diverging=i in (1, 3)))
    bar = prog._tqdm
    assert bar.leave is True and bar.n == 5
    prog.close()
    assert "5/5" in buf.getvalue() and "divergences=1" in buf.getvalue()  # the one at iteration 1 is warm-up
    assert not buf.getvalue().endswith("\r")  # closed with its last state left (tqdm ends it with a newline)


def test_lines_count_warmup_divergences_after_it_and_the_elapsed_time():
    buf = io.StringIO()
    prog = runner.Progress("sampling", bar=False, interval=0.0, file=buf, n_chains=2, n_warmup=3)
    for chain in range(2):
        for i in range(8):  # 3 warm-up + 5 kept iterations per chain
            prog(i, 8, None, _info(diverging=i in (1, 5)))
    prog.close()
    lines = buf.getvalue().splitlines()
    assert len(lines) == 16 + 1  # one per iteration at interval 0, and the last at close
    assert lines[0].startswith("sampling: 1/16 iterations (6%, warm-up included, 2 chains), 0 divergences")
    assert lines[-1].startswith("sampling: 16/16 iterations (100%, warm-up included, 2 chains), 2 divergences "
                                "after warm-up, acceptance 0.80, elapsed ")
    assert lines[-1].endswith(" s")
    prog.close()
    assert len(buf.getvalue().splitlines()) == 17  # a second close writes nothing


def test_a_short_run_writes_no_line_unless_asked():
    for final, n_lines in ((False, 0), (True, 1)):
        buf = io.StringIO()
        prog = runner.Progress("sampling", bar=False, interval=10.0, file=buf, final=final)
        for i in range(4):
            prog(i, 4, None, _info())
        prog.close()
        assert len(buf.getvalue().splitlines()) == n_lines


def _regression():
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(15, 1))
    return gb.GPRegressor(X, np.sin(2 * X[:, 0]) + 0.1 * rng.standard_normal(15), ard=False)


def _stderr_of(progress, monkeypatch, **kw):
    monkeypatch.setattr(api, "PROGRESS_INTERVAL", 0.0)  # a line per iteration instead of every 10 s
    buf = io.StringIO()  # not a terminal
    with contextlib.redirect_stderr(buf), warnings.catch_warnings():
        warnings.simplefilter("ignore", gb.NotConvergedWarning)
        gb.sample(_regression(), "nuts", chains=2, draws=10, n_warmup=15, seed=0, progress=progress, **kw)
    return buf.getvalue().splitlines()


@pytest.mark.parametrize("progress", [None, True])
def test_redirected_stderr_gets_lines_by_default(progress, monkeypatch):
    lines = _stderr_of(progress, monkeypatch, cores=1)
    assert lines and all(line.startswith("sampling: ") for line in lines)
    assert lines[-1].startswith("sampling: 50/50 iterations (100%, warm-up included, 2 chains)")
    assert "divergence" in lines[-1] and "elapsed" in lines[-1]
    assert _stderr_of(False, monkeypatch, cores=1) == []


def test_chains_in_processes_under_a_stopping_rule_count_warmup_and_blocks(monkeypatch):
    lines = _stderr_of(None, monkeypatch, cores=2, until_converged={"check_every": 5, "max_draws": 10,
                                                                      "ess_bulk": 1e9})
    assert lines[-1].startswith("sampling: 50/50 iterations") and "chain 0: 25/25 | chain 1: 25/25" in lines[-1]


def test_block_counts_follow_the_runners_order():
    """A worker's chains in blocks: every chain's warm-up in turn, then every chain's block in turn."""
    rule = runner.StopRule(check_every=2, max_draws=3)
    counts = parallel._BlockCounts([0, 2], n_warmup=3, rule=rule, thin=1)
    for _ in range(6):
        counts.add(_info(diverging=True))  # warm-up: not counted as divergences
    assert counts.take() == {0: (3, 2.4000000000000004, 3, 0), 2: (3, 2.4000000000000004, 3, 0)}
    for _ in range(4):  # block 1: 2 draws per chain
        counts.add(_info(diverging=True))
    counts.next_block(2)
    assert {c: v[0] for c, v in counts.take().items()} == {0: 2, 2: 2}
    for k in range(2):  # block 2: 1 draw per chain (max_draws 3)
        counts.add(_info(diverging=k == 1))
    assert {c: (v[0], v[3]) for c, v in counts.take().items()} == {0: (1, 0), 2: (1, 1)}
