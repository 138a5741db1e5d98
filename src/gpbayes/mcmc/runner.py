"""One chain runner above every sampler's ``init``/``step``.

A sampler in gpbayes is a pair ``init(...) -> State`` and
``step(rng, state, ...) -> (State, Info)`` (BlackJAX's shape).  This module
runs such a kernel: an optional warm-up (tuning) phase driven by an
*adaptation* object, then kept draws from the frozen kernel, recording per
draw the position, the log density and every scalar field of ``Info`` under
ArviZ's names.  Every sampler of the package (random-walk MH, HMC, NUTS,
slice, pseudo-marginal MH, the AA/SURR and surrogate-slice Gibbs sweeps, the
sparse-GP and GPLVM samplers) is run through :func:`run_chain`, and
:func:`gpbayes.io.to_inference_groups` turns its :class:`Chain` results into
the ArviZ layout.

Adaptation protocol (``gpbayes.mcmc.adaptation`` has the implementations)::

    astate = adapt.init(rng, state)            # may draw (e.g. H&G Alg. 4)
    for m in range(n_warmup):
        state, info = adapt.kernel(astate)(rng, state)
        astate = adapt.update(astate, m, state, info)
    step, params = adapt.finalize(astate)      # frozen kernel + tuned parameters

Warm-up cost is always reported under one key, ``Chain.warmup``:
``n_iterations``, ``n_cubic`` (O(n^3) operations of the initial evaluation,
the adapter's start-up and the warm-up steps; ``n_cubic_init`` the first
two), ``wall_time`` (seconds), the sums of the additive Info counters
(``n_steps``, ``n_likelihood``, ...), ``acceptance_rate`` (mean acceptance
probability over warm-up steps, where the kernel reports one) and
``n_accepted`` (accepted warm-up proposals).

Ctrl-C: a KeyboardInterrupt during :func:`run_chain` or :func:`run_chains`
becomes :class:`Interrupted` (a KeyboardInterrupt) carrying the chains'
draws kept so far (``Chain.stopped == "interrupted"``), so a caller can
return them, as ``gpbayes.sample`` does.

Stopping: :func:`run_chains` runs several chains of one job in blocks and
stops when split rank-normalised R-hat and bulk ESS reach their targets on
every parameter, or when a budget (draws, O(n^3) operations, seconds) is
spent (:class:`StopRule`).  Each chain has its own generator, so a chain's
draws do not depend on the block size or on the other chains.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .. import linalg

__all__ = [
    "STAT_NAMES",
    "ADDITIVE_STATS",
    "Chain",
    "ChainSpec",
    "run_spec",
    "run_specs",
    "StopRule",
    "Progress",
    "Interrupted",
    "run_chain",
    "run_chains",
    "converged",
]

log = logging.getLogger("gpbayes")

#: Info field -> sample_stats name (ArviZ's names where ArviZ has one).
STAT_NAMES: dict[str, str] = {
    "acceptance_prob": "acceptance_rate",
    "n_grad_evals": "n_steps",
    "n_likelihood_evals": "n_likelihood",
    "n_density_evals": "n_likelihood",  # unless the kernel also counts n_likelihood_evals (then kept as is)
    "proposal_log_density": "proposal_lp",
}
#: Per-draw counters that add up over thinned-away steps and over the warm-up.
#: Numerical trouble tallied by ``gpbayes.linalg.count_ops`` around every step and recorded per draw:
#: factorisations that needed jitter, the largest jitter, non-converged Laplace/EP approximations,
#: failed likelihood estimates (``max_jitter`` is a maximum over thinned steps, the others add up).
TROUBLE_STATS = ("n_jitter", "max_jitter", "n_not_converged", "n_failed_estimates")
ADDITIVE_STATS = ("n_jitter", "n_not_converged", "n_failed_estimates", "n_cubic", "n_steps", "n_likelihood", "n_leapfrog", "n_shrinkages", "n_steps_out",
                  "n_bound_evals", "n_covariance", "n_density_evals", "n_cubic_theta", "n_failed_cholesky",
                  "wall_time")

StepFn = Callable[[np.random.Generator, Any], tuple[Any, Any]]


@dataclasses.dataclass(frozen=True)
class Chain:
    """One chain's result.

    ``draws`` (n_draws, p) kept positions; ``stats`` per-draw statistics
    ({name: (n_draws,)}: ``lp``, ``wall_time`` and the kernel's Info fields
    under :data:`STAT_NAMES`); ``warmup`` the warm-up cost and summary;
    ``params`` the tuned kernel parameters; ``state`` the final state;
    ``stopped`` why sampling ended (``"length"``, ``"converged"``,
    ``"budget: ..."``); ``extra`` per-draw arrays recorded by the
    ``record`` hook (e.g. latent draws).
    """

    draws: np.ndarray
    stats: dict
    warmup: dict
    params: dict
    state: Any
    stopped: str = "length"
    extra: dict = dataclasses.field(default_factory=dict)

    @property
    def n_draws(self) -> int:
        """The number of kept draws."""
        return int(self.draws.shape[0])


@dataclasses.dataclass(frozen=True)
class StopRule:
    """Stop when converged or when a budget is spent (checked every ``check_every`` draws).

    Converged: split rank-normalised R-hat < ``rhat`` and bulk ESS >
    ``ess_bulk`` (summed over chains, Vehtari et al. 2021) on every
    parameter.  Budgets (per job, over all its chains): ``max_draws`` kept
    draws per chain, ``max_cubic`` O(n^3) operations, ``max_seconds`` of wall
    time.  ``min_draws`` draws per chain before convergence is checked.
    """

    rhat: float = 1.01
    ess_bulk: float = 400.0
    check_every: int = 100
    max_draws: int = 10_000
    max_cubic: float = math.inf
    max_seconds: float = math.inf
    min_draws: int = 100
    #: the per-draw statistic holding log importance weights (``gpbayes.mcmc.is_corrected``): R-hat of
    #: the draws as they are, the ESS that of the weighted estimator
    #: (``diagnostics.importance_corrected_summary``'s ``ess_bulk``); None: unweighted draws
    weights: str | None = None

    def __post_init__(self):
        if self.check_every < 1 or self.max_draws < 1:
            raise ValueError(f"check_every and max_draws must be >= 1, got {self.check_every}, {self.max_draws}")
        if not self.rhat > 1.0:
            raise ValueError(f"the R-hat target must be > 1, got {self.rhat}")


class Progress:
    """Default progress reporting: one ``tqdm.auto`` bar over all chains (``bar``; default: when stderr
    is a terminal), else a line every ``interval`` seconds (``interval``), else a log line every ~5 %.

    The bar is a widget in a notebook and text elsewhere, written to ``file`` (default
    ``sys.stderr`` when the bar starts); its last state stays in place when it is closed (tqdm's
    ``leave``), on a terminal too.  With ``bar=False`` and ``interval`` (seconds; ``gb.sample`` uses 10
    when stderr is not a terminal, e.g. redirected to a file) a line is written to ``file`` at most every
    ``interval`` seconds -- iterations done of the total (warm-up included), divergences, acceptance,
    elapsed seconds -- and one more at ``close()`` if any was written (or always, with ``final``); with
    ``bar=False`` and no ``interval``, the log line of ``logging.getLogger("gpbayes")`` every ~5 %.

    ``Progress(label, n_chains=c)(iteration, n_total, state, info)`` is a
    valid ``callback`` for the c chains of one job run one after the other
    (or in blocks, :func:`run_chains`): ``n_total`` is one chain's
    iterations, warm-up included, so the bar's total is ``c * n_total``; a
    chain is known to have begun when ``iteration`` drops back.  ``count``
    is the number of iterations reported, ``total`` the bar's total,
    ``divergences`` the steps whose Info said ``diverging`` (after the warm-up when ``n_warmup``, the
    warm-up iterations per chain, is given: those of the warm-up are expected and do not count).
    ``close()`` ends the bar.  Nothing here touches the generator, so
    progress reporting never changes a chain.
    """

    def __init__(self, label: str = "chain", *, every: float = 0.05, bar: bool | None = None, n_chains: int = 1,
                 file=None, interval: float | None = None, final: bool = False, n_warmup: int | None = None):
        self.label = label
        self.n_warmup = n_warmup
        self.every = every
        self.bar = sys.stderr.isatty() if bar is None else bar
        self.file = file
        self.interval = interval
        self.final = final
        self.n_chains = max(1, int(n_chains))
        self.count = 0
        self.total = 0
        self.chain = 0
        self.divergences = 0
        self.lines = 0
        self._last = -1
        self._t0 = time.perf_counter()
        self._t_line = self._t0
        self._acc = 0.0
        self._n = 0
        self._tqdm = None
        self._shown_divergences = 0
        self._closed = False

    def __call__(self, iteration: int, n_total: int, state, info) -> None:
        a = getattr(info, "acceptance_prob", None)
        if a is not None and np.ndim(a) == 0 and math.isfinite(a):
            self._acc += float(a)
            self._n += 1
        d = getattr(info, "diverging", None)
        if d is not None and np.ndim(d) == 0 and bool(d) and iteration >= (self.n_warmup or 0):
            self.divergences += 1
        if self.count == 0:
            self.total = int(n_total) * self.n_chains
        elif iteration <= self._last and self.chain + 1 < self.n_chains:
            self.chain += 1  # the next chain (or, in blocks, the next chain's block) has begun
        self._last = iteration
        self.count += 1
        if self.count > self.total:  # a job whose chains report more than announced: grow, never overflow
            self.total = self.count
            if self._tqdm is not None:
                self._tqdm.total = self.total
        if self.bar:
            if self._tqdm is None:
                self._tqdm = self._open_bar()
            self._show_divergences()
            self._tqdm.update(1)
            return
        if self.interval is not None:
            self._maybe_line()
            return
        every = max(1, math.ceil(self.every * self.total))
        if self.count % every == 0 or self.count == self.total:
            frac = self.count / max(self.total, 1)
            elapsed = time.perf_counter() - self._t0
            eta = elapsed / frac - elapsed
            acc = self._acc / self._n if self._n else math.nan
            log.info("%s: iteration %d/%d (%.0f%%) over %d chain(s), acceptance %.2f, elapsed %.1f s, ETA %.1f s",
                     self.label, self.count, self.total, 100 * frac, self.n_chains, acc, elapsed, eta)

    def advance(self, chain: int, n_new: int, n_total: int, acceptance_sum: float = 0.0, n_acceptance: int = 0,
                n_divergent: int = 0) -> None:
        """``n_new`` more iterations of chain ``chain`` (of ``n_total``, warm-up included; 0: unchanged),
        ``n_divergent`` of them divergent, as the worker processes of ``gb.sample(cores=...)`` report them
        (``gpbayes.parallel``).

        The bar (or line, or log line) counts all chains together and shows every chain's own count
        (``chain 0: 120/1500 | chain 1: ...``).  Nothing here touches a generator.
        """
        if not hasattr(self, "_per_chain"):
            self._per_chain: dict[int, list[int]] = {}
        done = self._per_chain.setdefault(int(chain), [0, 0])
        self.chain = max(self.chain, int(chain))  # the highest chain begun
        done[0] += int(n_new)
        if n_total:
            done[1] = int(n_total)
        self._acc += float(acceptance_sum)
        self._n += int(n_acceptance)
        self.divergences += int(n_divergent)
        self.count += int(n_new)
        self.total = max(self.count, sum(t for _, t in self._per_chain.values())
                         + max(0, self.n_chains - len(self._per_chain)) * max((t for _, t in self._per_chain.values()),
                                                                                default=0))
        chains = self._chains()
        if self.bar:
            if self._tqdm is None:
                self._tqdm = self._open_bar()
            self._tqdm.total = self.total
            self._tqdm.set_postfix_str(chains + self._divergence_note(), refresh=False)
            self._tqdm.update(int(n_new))
            return
        if self.interval is not None:
            self._maybe_line()
            return
        every = max(1, math.ceil(self.every * max(self.total, 1)))
        if self.count // every != (self.count - int(n_new)) // every or self.count == self.total:
            frac = self.count / max(self.total, 1)
            elapsed = time.perf_counter() - self._t0
            eta = elapsed / frac - elapsed if frac > 0 else math.nan
            acc = self._acc / self._n if self._n else math.nan
            log.info("%s: iteration %d/%d (%.0f%%), acceptance %.2f, elapsed %.1f s, ETA %.1f s; %s",
                     self.label, self.count, self.total, 100 * frac, acc, elapsed, eta, chains)

    def _chains(self) -> str:
        per = getattr(self, "_per_chain", {})
        return " | ".join(f"chain {c}: {d}/{t}" for c, (d, t) in sorted(per.items()))

    def _divergence_note(self) -> str:
        return f", {self.divergences} divergence{'s' if self.divergences != 1 else ''}" if self.divergences else ""

    def _show_divergences(self) -> None:
        """Put the divergences so far in the bar's postfix when their number changed."""
        if self.divergences != self._shown_divergences:
            self._shown_divergences = self.divergences
            self._tqdm.set_postfix_str(f"divergences={self.divergences}", refresh=False)

    def line(self) -> str:
        """The progress line of the line mode: ``label: count/total iterations (warm-up included, c chains),
        k divergences, acceptance a, elapsed s`` (and every chain's count when chains run in processes)."""
        elapsed = time.perf_counter() - self._t0
        frac = self.count / max(self.total, 1)
        acc = f", acceptance {self._acc / self._n:.2f}" if self._n else ""
        chains = self._chains()
        after = " after warm-up" if self.n_warmup is not None else ""
        return (f"{self.label}: {self.count}/{self.total} iterations ({100 * frac:.0f}%, warm-up included, "
                f"{self.n_chains} chain{'s' if self.n_chains != 1 else ''}), {self.divergences} "
                f"divergence{'s' if self.divergences != 1 else ''}{after}{acc}, elapsed {elapsed:.1f} s"
                + (f"; {chains}" if chains else ""))

    def _write_line(self) -> None:
        file = sys.stderr if self.file is None else self.file
        print(self.line(), file=file, flush=True)
        self.lines += 1
        self._t_line = time.perf_counter()

    def _maybe_line(self) -> None:
        if time.perf_counter() - self._t_line >= self.interval:
            self._write_line()

    def _open_bar(self):
        """The ``tqdm.auto`` bar (a notebook widget under Jupyter, text on ``file`` otherwise); it stays on
        the screen when closed (``leave=True``)."""
        from tqdm.auto import tqdm

        file = sys.stderr if self.file is None else self.file
        terminal = bool(getattr(file, "isatty", lambda: False)())
        # off a terminal, \r cannot redraw a line: redraw seldom
        return tqdm(total=self.total, desc=self.label, leave=True, file=file,
                    mininterval=0.1 if terminal else 5.0)

    def close(self) -> None:
        """Close the progress bar, if one is open (its last state stays); in the line mode, write the last
        line if a line was written before (or ``final``)."""
        if self._tqdm is not None:
            self._show_divergences()
            self._tqdm.close()
            self._tqdm = None
        if self.interval is not None and not self.bar and (self.lines or self.final) and self.count \
                and not self._closed:
            self._write_line()
        self._closed = True  # a second close() writes nothing more

class Interrupted(KeyboardInterrupt):
    """Ctrl-C during sampling, with the draws kept so far: ``chains``, a list of :class:`Chain`
    (``stopped == "interrupted"``; finished chains of the job may come first)."""

    def __init__(self, chains: Sequence[Chain] = ()):
        super().__init__("sampling interrupted")
        self.chains = list(chains)


def _info_items(info) -> list[tuple[str, Any]]:
    if info is None:
        return []
    if hasattr(info, "_asdict"):
        items = info._asdict().items()
    elif dataclasses.is_dataclass(info):
        items = dataclasses.asdict(info).items()
    elif isinstance(info, Mapping):
        items = info.items()
    else:
        return []
    items = [(k, v) for k, v in items if np.ndim(v) == 0 and v is not None]
    has_lik = any(k == "n_likelihood_evals" for k, _ in items)
    return [(k if (k == "n_density_evals" and has_lik) else STAT_NAMES.get(k, k), v) for k, v in items]


def _default_position(state) -> np.ndarray:
    return state.position


def _default_lp(state) -> float:
    return state.log_density


class _Recorder:
    """Per-draw arrays, filled as draws are kept (thinned steps add their counters)."""

    def __init__(self, position, lp, record):
        self.position, self.lp, self.record = position, lp, record
        self.draws: list[np.ndarray] = []
        self.stats: dict[str, list] = {}
        self.extra: dict[str, list] = {}
        self._pending: dict[str, float] = {}

    def add_step(self, info, wall: float, keep: bool, state, trouble=()) -> None:
        items = _info_items(info) + [("wall_time", wall)] + list(trouble)
        for k, v in items:
            if k in ADDITIVE_STATS:
                self._pending[k] = self._pending.get(k, 0) + v
            elif k == "max_jitter":
                self._pending[k] = max(self._pending.get(k, 0.0), v)
        if not keep:
            return
        self.draws.append(np.array(self.position(state), dtype=np.float64, copy=True))
        row = {"lp": float(self.lp(state))}
        for k, v in items:
            row[k] = self._pending.pop(k) if (k in ADDITIVE_STATS or k == "max_jitter") else v
        self._pending.clear()
        n_before = len(self.draws) - 1
        for k, v in row.items():
            col = self.stats.get(k)
            if col is None:
                col = self.stats[k] = [None] * n_before
            col.append(v)
        for col in self.stats.values():
            if len(col) < len(self.draws):
                col.append(None)
        if self.record is not None:
            for k, v in self.record(state, info).items():
                self.extra.setdefault(k, []).append(np.array(v, copy=True))

    def arrays(self) -> tuple[np.ndarray, dict, dict]:
        draws = np.asarray(self.draws, dtype=np.float64)
        if not self.draws:  # no kept draw (n_draws = 0, or interrupted before the first)
            draws = draws.reshape(0, 0)
        elif draws.ndim == 1:
            draws = draws.reshape(len(self.draws), -1)
        stats = {}
        for k, col in self.stats.items():
            if any(v is None for v in col):
                col = [np.nan if v is None else v for v in col]
            stats[k] = np.asarray(col)
        extra = {k: np.asarray(v) for k, v in self.extra.items()}
        return draws, stats, extra


def _warmup(rng, state, n_warmup: int, step: StepFn | None, adapt, callback, n_total: int):
    """Run the warm-up phase; return (state, frozen step, params, warm-up summary)."""
    t0 = time.perf_counter()
    totals: dict[str, float] = {}
    acc, n_acc, n_accepted = 0.0, 0, 0
    with linalg.count_ops() as init_ops:
        if callable(state) and not hasattr(state, "_fields"):
            state = state()
        astate = adapt.init(rng, state) if adapt is not None else None
    step_cubic = 0
    with linalg.count_ops() as wops:
        for m in range(n_warmup):
            kernel = adapt.kernel(astate) if adapt is not None else step
            state, info = kernel(rng, state)
            if adapt is not None:
                astate = adapt.update(astate, m, state, info)
            for k, v in _info_items(info):
                if k in ADDITIVE_STATS:
                    totals[k] = totals.get(k, 0) + v
                if k == "accepted":
                    n_accepted += int(v)
                if k == "acceptance_rate" and v is not None and math.isfinite(v):
                    acc += float(v)
                    n_acc += 1
            if callback is not None:
                callback(m, n_total, state, info)
    params: dict = {}
    if adapt is not None:
        step, params = adapt.finalize(astate)
        params = dict(params)
    step_cubic = int(totals.pop("n_cubic", 0))
    warmup = {
        "n_iterations": int(n_warmup),
        "n_cubic": int(init_ops.cubic) + step_cubic,
        "n_cubic_init": int(init_ops.cubic),
        "wall_time": float(time.perf_counter() - t0),
        "acceptance_rate": acc / n_acc if n_acc else math.nan,
        "n_accepted": n_accepted,
    }
    warmup.update({k: v for k, v in totals.items()})
    warmup.update({"n_jitter": wops.jitter_events + init_ops.jitter_events,
                   "max_jitter": max(wops.max_jitter, init_ops.max_jitter),
                   "n_not_converged": wops.not_converged + init_ops.not_converged,
                   "n_failed_estimates": wops.failed_estimates + init_ops.failed_estimates})
    warmup.update({f"adapt_{k}": v for k, v in params.pop("_cost", {}).items()})
    return state, step, params, warmup


def run_chain(
    rng: np.random.Generator,
    step: StepFn | None,
    state,
    *,
    n_draws: int,
    n_warmup: int = 0,
    adapt=None,
    thin: int = 1,
    callback: Callable | None = None,
    position: Callable = _default_position,
    lp: Callable = _default_lp,
    record: Callable | None = None,
) -> Chain:
    """Warm up, then keep every ``thin``-th of ``n_draws * thin`` draws of the frozen kernel.

    Parameters
    ----------
    rng : the chain's generator; every random draw of both phases comes from it.
    step : ``step(rng, state) -> (state, info)``, the kernel of the kept draws
        (``None`` when ``adapt`` provides it at the end of warm-up).
    state : the initial state, or a zero-argument callable making it (its
        cost then counts as warm-up cost).
    n_draws : kept draws.
    n_warmup : warm-up iterations; with ``adapt=None`` they run ``step`` and
        are discarded (burn-in).
    adapt : an adaptation object (module docstring; ``gpbayes.mcmc.adaptation``).
    thin : keep one draw in ``thin``; counters of skipped steps (O(n^3)
        operations, gradient and likelihood evaluations, wall time) are added
        to the kept draw so that costs stay complete.
    callback : ``callback(iteration, n_total, state, info)`` after every
        iteration (warm-up included); see :class:`Progress`.
    position, lp : accessors of the state's position and log density
        (defaults ``state.position``, ``state.log_density``).
    record : ``record(state, info) -> {name: array}``, extra arrays to keep
        per draw (e.g. a latent draw carried in the state).
    """
    n_draws, n_warmup, thin = int(n_draws), int(n_warmup), int(thin)
    if n_draws < 0 or n_warmup < 0 or thin < 1:
        raise ValueError(f"need n_draws >= 0, n_warmup >= 0, thin >= 1; got {n_draws}, {n_warmup}, {thin}")
    if step is None and adapt is None:
        raise ValueError("give a step function or an adaptation that provides one")
    n_total = n_warmup + n_draws * thin
    rec = _Recorder(position, lp, record)
    warmup, params = {}, {}
    try:
        state, step, params, warmup = _warmup(rng, state, n_warmup, step, adapt, callback, n_total)
        state = _sample(rng, step, state, rec, n_draws * thin, thin, callback, n_warmup, n_total)
    except KeyboardInterrupt:  # also an Interrupted of a run nested in a step: this chain's draws are the result
        raise Interrupted([_partial(rec, warmup, params)]) from None
    draws, stats, extra = rec.arrays()
    return Chain(draws, stats, warmup, params, state, "length", extra)


def _partial(rec: _Recorder, warmup: dict, params: dict) -> Chain:
    """The draws kept before an interrupt (columns cut to the number of complete draws)."""
    n = min([len(rec.draws)] + [len(c) for c in rec.stats.values()] + [len(c) for c in rec.extra.values()])
    del rec.draws[n:]
    for col in (*rec.stats.values(), *rec.extra.values()):
        del col[n:]
    draws, stats, extra = rec.arrays()
    return Chain(draws, stats, dict(warmup), dict(params), None, "interrupted", extra)


def _sample(rng, step, state, rec: _Recorder, n_steps: int, thin: int, callback, offset: int, n_total: int):
    for i in range(n_steps):
        t = time.perf_counter()
        with linalg.count_ops() as ops:
            state, info = step(rng, state)
        wall = time.perf_counter() - t
        trouble = tuple(ops.trouble().items())
        rec.add_step(info, wall, (i + 1) % thin == 0 if thin > 1 else True, state, trouble)
        if callback is not None:
            callback(offset + i, n_total, state, info)
    return state


def _converged(recs: Sequence[_Recorder], rule: StopRule) -> bool:
    n = min(len(r.draws) for r in recs)
    x = np.stack([np.asarray(r.draws[:n]) for r in recs]) if n else np.zeros((len(recs), 0, 0))
    lw = None
    if rule.weights is not None and n:
        lw = np.stack([np.asarray(r.stats[rule.weights][:n], dtype=np.float64) for r in recs])
    return converged(x, rule, lw)


def converged(x: np.ndarray, rule: StopRule, log_weights: np.ndarray | None = None) -> bool:
    """``rule``'s convergence test on draws ``x`` (chain, draw, p): enough draws, split rank R-hat <
    ``rule.rhat`` and bulk ESS > ``rule.ess_bulk`` on every column (Vehtari et al. 2021); with
    ``log_weights`` (chain, draw) the ESS is the importance-corrected estimator's
    (``diagnostics.importance_corrected_summary``)."""
    from .. import diagnostics

    n = x.shape[1]
    if n < max(rule.min_draws, diagnostics.MIN_DRAWS):
        return False
    if log_weights is not None:
        if not np.any(np.isfinite(log_weights)):
            return False
        summ = diagnostics.importance_corrected_summary(x, log_weights)
        return bool(np.all(summ["rhat"] < rule.rhat) and np.all(summ["ess_bulk"] > rule.ess_bulk))
    for j in range(x.shape[2]):
        col = x[:, :, j]
        if diagnostics.split_rhat(col, rank_normalize=True) >= rule.rhat:
            return False
        if diagnostics.ess(col, method="bulk") <= rule.ess_bulk:
            return False
    return True


def run_chains(
    rngs: Sequence[np.random.Generator],
    step: StepFn | None,
    states: Sequence,
    *,
    stop: StopRule,
    n_warmup: int = 0,
    adapt=None,
    thin: int = 1,
    callback: Callable | None = None,
    position: Callable = _default_position,
    lp: Callable = _default_lp,
    record: Callable | None = None,
) -> list[Chain]:
    """Several chains of one job, run in blocks of ``stop.check_every`` draws until ``stop`` says so.

    Every chain warms up with its own generator (and, with ``adapt``, its
    own copy of the adaptation state), then all chains advance block by
    block; after each block the rule is checked across the chains.  A
    chain's draws are those it would give alone with the same number of
    draws.  Every returned Chain records why sampling stopped.
    """
    if len(rngs) != len(states) or not rngs:
        raise ValueError(f"need one generator per initial state, got {len(rngs)} and {len(states)}")
    specs = [ChainSpec(state, step, int(n_warmup), adapt, position, lp, record) for state in states]
    return _run_blocks(rngs, specs, stop, thin, callback)


def _run_blocks(rngs, specs, stop, thin, callback) -> list[Chain]:
    """Warm up every chain of ``specs``, then advance them together in blocks (:func:`run_chains`)."""
    t0 = time.perf_counter()
    chains: list[list] = []  # per chain [rng, state, kernel, params, warmup, recorder], filled as it goes
    try:
        return _blocks(t0, chains, rngs, specs, stop, thin, callback)
    except KeyboardInterrupt:
        raise Interrupted([_partial(c[5], c[4], c[3]) for c in chains]) from None


def _blocks(t0, chains, rngs, specs, stop, thin, callback):
    n_warmup = specs[0].n_warmup
    for rng, spec in zip(rngs, specs):
        state, kernel, params, warmup = _warmup(rng, spec.init, int(n_warmup), spec.step, spec.adapt, callback,
                                                int(n_warmup) + stop.max_draws * thin)
        chains.append([rng, state, kernel, params, warmup, _Recorder(spec.position, spec.lp, spec.record)])
    cubic = sum(c[4]["n_cubic"] for c in chains)
    reason = f"budget: {stop.max_draws} draws"
    while True:
        n_done = len(chains[0][5].draws)
        block = min(stop.check_every, stop.max_draws - n_done)
        for c in chains:
            rng, state, kernel, _, _, rec = c
            c[1] = _sample(rng, kernel, state, rec, block * thin, thin, callback, int(n_warmup) + n_done * thin,
                           int(n_warmup) + stop.max_draws * thin)
            cubic += sum(rec.stats.get("n_cubic", [0])[-block:] or [0])
        n_done += block
        sync = getattr(stop, "sync", None)
        if sync is not None:  # chains in worker processes (gpbayes.parallel): the calling process decides
            verdict = sync([c[5] for c in chains], n_done, cubic)
            if verdict is None:
                continue
            reason = verdict
            break
        if _converged([c[5] for c in chains], stop):
            reason = "converged"
            break
        if n_done >= stop.max_draws:
            break
        if cubic >= stop.max_cubic:
            reason = f"budget: {stop.max_cubic:g} O(n^3) operations"
            break
        if time.perf_counter() - t0 >= stop.max_seconds:
            reason = f"budget: {stop.max_seconds:g} s"
            break
    out = []
    for _, state, _, params, warmup, rec in chains:
        draws, stats, extra = rec.arrays()
        out.append(Chain(draws, stats, warmup, params, state, reason, extra))
    return out


@dataclasses.dataclass(frozen=True)
class ChainSpec:
    """One chain's configuration of the runner: what a sampler module's ``chain_spec`` returns.

    ``init`` is the initial state or a zero-argument callable making it (its
    cost is then warm-up cost); ``step`` is
    the kernel of the kept draws (None when ``adapt`` provides it);
    ``n_warmup`` warm-up iterations; ``position``/``lp``/``record`` as in
    :func:`run_chain`.  A module's ``run_chain`` is ``run_spec`` of its
    ``chain_spec``; ``run_specs`` runs several specs of one configuration
    under a :class:`StopRule`.
    """

    init: Callable
    step: StepFn | None = None
    n_warmup: int = 0
    adapt: Any = None
    position: Callable = _default_position
    lp: Callable = _default_lp
    record: Callable | None = None


def run_spec(rng: np.random.Generator, spec: ChainSpec, *, n_draws: int, thin: int = 1,
             callback: Callable | None = None) -> Chain:
    """:func:`run_chain` of one :class:`ChainSpec`."""
    return run_chain(rng, spec.step, spec.init, n_draws=n_draws, n_warmup=spec.n_warmup, adapt=spec.adapt, thin=thin,
                     callback=callback, position=spec.position, lp=spec.lp, record=spec.record)


def run_specs(rngs: Sequence[np.random.Generator], specs: Sequence[ChainSpec], *, stop: StopRule, thin: int = 1,
              callback: Callable | None = None) -> list[Chain]:
    """:func:`run_chains` of one job's chains, each with its own spec (kernel, adaptation, accessors).

    The specs need the same warm-up length (the chains advance together);
    each chain runs its own kernel, so chains whose kernels were tuned apart
    (e.g. pseudo-marginal proposals adapted per chain) run correctly.
    """
    if len(rngs) != len(specs) or not specs:
        raise ValueError(f"need one generator per spec, got {len(rngs)} and {len(specs)}")
    s0 = specs[0]
    if any(s.n_warmup != s0.n_warmup for s in specs):
        raise ValueError("the chains of one job need the same warm-up length")
    return _run_blocks(rngs, list(specs), stop, thin, callback)
