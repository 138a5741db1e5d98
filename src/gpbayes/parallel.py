"""Chains in separate processes (``gb.sample(..., cores=k)``), with the draws of the sequential run.

PyMC and NumPyro run their chains in parallel; so does ``gb.sample`` when a
method's chains are independent (``Method.independent_chains``: chain c's
draws depend only on its own generator, after what the chains share --
``Method.prepare``, e.g. the MAP of the exact marginal from chain 0's
generator -- has been computed in the calling process, as the sequential run
computes it first).  The chains are dealt to ``cores`` worker processes
(chain c to worker c mod cores); each worker runs its chains one after the
other with the chain's generator in the state the sequential run hands it, so
every chain is the same, draw for draw, as with ``cores=1``: the generator
streams are the same, and so is the arithmetic, because each worker runs its
BLAS on one thread, as :func:`gpbayes.threads.sampling_threads` does in the
calling process below ``CROSSOVER_N`` unless the user set a thread variable
(with more threads, or at larger n, the last bits of BLAS results may differ
between the two runs -- ``gpbayes.threads``).

Processes are started with the ``forkserver`` context where the platform has
it (``spawn`` otherwise; PyMC does the same on macOS), never by a bare
``fork`` of a process that may hold BLAS threads.  The workers are started
without the main module (they need only gpbayes), so a script needs no
``if __name__ == "__main__":`` guard -- unless its model or method uses
classes defined in the script itself (a kernel, a likelihood: see
:func:`needs_main`); then, and for a notebook's own classes, the chains run
in the calling process, with a warning.

Progress: each worker reports every chain's iterations (warm-up included) to
the calling process, which shows them on one bar per job with every chain's
count (:meth:`gpbayes.mcmc.runner.Progress.advance`).  Ctrl-C: the workers
ignore SIGINT themselves; the calling process sets a stop event that each
worker checks after every iteration, so every chain stops where it is and
its draws so far come back (``runner.Interrupted``), as in the sequential
run.  An exception inside a worker is raised again in the calling process,
with a note naming the chain and the worker's traceback.
"""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
import os
import pickle
import queue as queue_mod
import signal
import sys
import time
import traceback
import types
from collections.abc import Sequence

import numpy as np

from .mcmc import runner
from .mcmc.runner import Chain

__all__ = ["available_cores", "resolve_cores", "needs_main", "run_chains_in_processes"]

#: seconds between two progress reports of one worker
_REPORT_EVERY = 0.2
#: seconds the calling process waits for the workers' partial chains after Ctrl-C
_INTERRUPT_GRACE = 60.0


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the platform tells it, else ``os.cpu_count``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def resolve_cores(cores, chains: int) -> int:
    """The number of worker processes: ``cores`` (None: :func:`available_cores`), at most ``chains``.

    A bad value stops with a message naming ``cores``.
    """
    if cores is None:
        return max(1, min(available_cores(), int(chains)))
    ok = isinstance(cores, (int, np.integer)) and not isinstance(cores, (bool, np.bool_))
    if isinstance(cores, (float, np.floating)) and np.isfinite(cores) and float(cores).is_integer():
        cores, ok = int(cores), True
    if not ok or int(cores) < 1:
        raise ValueError(f"cores must be None (the cores available) or an integer >= 1, got {cores!r}"
                         + (f" ({type(cores).__name__})" if not ok else ""))
    return max(1, min(int(cores), int(chains)))


def _context():
    """The ``forkserver`` context, its server importing gpbayes once (so a worker starts in milliseconds,
    not the seconds of importing numpy, scipy and xarray); ``spawn`` where there is no forkserver."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["gpbayes.methods", "gpbayes.parallel"])
    return ctx


def needs_main(*objects) -> str | None:
    """Why the workers could not rebuild ``objects`` without running the main script (None: they can).

    A model or method whose classes (a kernel, a likelihood, a method) are defined in ``__main__`` --
    a script or a notebook -- pickles as references into ``__main__``; a worker could only resolve
    them by importing the main script again, which reruns an unguarded script's sampling and is
    impossible for a notebook.  Objects that do not pickle at all are refused too.
    """
    try:
        data = pickle.dumps(objects)
    except Exception as err:  # noqa: BLE001 -- any pickling failure means: run in this process
        return f"the model or method cannot be pickled ({type(err).__name__}: {err})"
    if b"__main__" in data:
        return "the model or method uses classes defined in the main script or notebook (__main__)"
    return None


@contextlib.contextmanager
def _main_hidden():
    """Start workers without the main module: multiprocessing's ``spawn``/``forkserver`` children
    otherwise import the main script again (``spawn.get_preparation_data``), which reruns the sampling
    of a script without the ``if __name__ == "__main__":`` guard.  The workers need nothing from it
    (:func:`needs_main` was checked), so for the moment of ``Process.start`` ``__main__`` is a bare
    module, then the user's again."""
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main


class _RemoteTraceback(Exception):
    """The traceback of an exception raised in a worker process (as ``concurrent.futures`` shows it)."""

    def __init__(self, tb: str):
        super().__init__(tb)
        self.tb = tb

    def __str__(self):
        return self.tb


def _picklable_chain(chain: Chain) -> Chain:
    """The chain, without its final state when that does not pickle (the result does not use it)."""
    try:
        pickle.dumps(chain.state)
        return chain
    except Exception:
        return dataclasses.replace(chain, state=None)


@dataclasses.dataclass(frozen=True)
class _SyncedStop(runner.StopRule):
    """A worker's StopRule: after each block ``sync(recorders, n_done, cubic)`` reports the block to
    the calling process and returns its verdict (None: go on; else why the chains stop)."""

    sync: object = dataclasses.field(default=None, compare=False)


def _orphaned() -> bool:
    """True when the process that started this worker has died (killed without the chance to set the
    stop event): the worker then stops instead of sampling on for nobody."""
    parent = multiprocessing.parent_process()
    return parent is not None and not parent.is_alive()


def _error_message(c, err):
    try:
        pickle.dumps(err)
        exc = err
    except Exception:
        exc = None
    return ("error", c, exc, type(err).__name__, str(err), traceback.format_exc())


def _acceptance_and_divergence(info, warmup: bool) -> tuple[float, int, int]:
    """(acceptance probability, 1 if it is one finite number else 0, 1 if the step diverged after the warm-up
    else 0) of a step's Info, for the progress messages (block-wise samplers report arrays: not counted)."""
    a = getattr(info, "acceptance_prob", None)
    ok = a is not None and np.ndim(a) == 0 and np.isfinite(a)
    d = getattr(info, "diverging", None)
    return (float(a) if ok else 0.0), int(ok), int(not warmup and d is not None and np.ndim(d) == 0 and bool(d))


class _BlockCounts:
    """Iterations per chain of a worker running its chains in blocks (``runner.run_chains``' order: every
    chain's warm-up in turn, then every chain's block in turn), counted as the callback sees them: the
    callback does not say which chain is stepping, the order does.  Nothing here touches a generator."""

    def __init__(self, indices, n_warmup: int, rule, thin: int):
        self.indices, self.rule, self.thin = list(indices), rule, thin
        self.seg = n_warmup if n_warmup > 0 else self._block_len(0)  # iterations per chain in this phase
        self.warmup = n_warmup > 0
        self.seen = 0  # iterations of this phase so far (all chains)
        self.pending: dict[int, list] = {}

    def _block_len(self, n_done: int) -> int:
        return max(1, min(self.rule.check_every, self.rule.max_draws - n_done) * self.thin)

    def add(self, info) -> None:
        """One more iteration, of the chain whose turn it is."""
        if self.warmup and self.seen >= self.seg * len(self.indices):  # warm-up over: the first block begins
            self.warmup, self.seen, self.seg = False, 0, self._block_len(0)
        c = self.indices[min(self.seen // self.seg, len(self.indices) - 1)]
        self.seen += 1
        acc, n_acc, div = _acceptance_and_divergence(info, self.warmup)
        p = self.pending.setdefault(c, [0, 0.0, 0, 0])
        p[0] += 1
        p[1] += acc
        p[2] += n_acc
        p[3] += div

    def next_block(self, n_done: int) -> None:
        """A block ended with ``n_done`` draws per chain: the next one is counted from its start."""
        self.warmup, self.seen, self.seg = False, 0, self._block_len(n_done)

    def take(self) -> dict:
        """The counts since the last call, per chain: {c: (iterations, acceptance sum, its count, divergences)}."""
        out, self.pending = {c: tuple(v) for c, v in self.pending.items() if v[0]}, {}
        return out


def _run_blocks_in_worker(out, replies, stop, meth, model, indices, rngs, prepared, n_warmup, rule, thin=1):
    """The worker's chains together under ``rule``, block by block, each block reported on ``out`` as
    ``("block", indices, {c: new draws}, n_done, cubic)`` and the verdict awaited on ``replies``."""
    from . import methods as inference

    sent = {c: 0 for c in indices}
    n_total = int(n_warmup) + rule.max_draws * thin
    counts = _BlockCounts(indices, int(n_warmup), rule, thin)

    def flush():
        for c, (n, acc, n_acc, n_div) in counts.take().items():
            out.put(("progress", c, n, n_total, acc, n_acc, n_div))

    def sync(recs, n_done, cubic):
        new = {}
        for c, rec in zip(indices, recs):
            new[c] = np.asarray(rec.draws[sent[c]:n_done], dtype=np.float64)
            if rule.weights is not None:  # the log weights travel as one more column
                lw = np.asarray(rec.stats[rule.weights][sent[c]:n_done], dtype=np.float64)
                new[c] = np.column_stack([new[c].reshape(len(lw), -1), lw])
            sent[c] = n_done
        flush()  # every iteration of the block (and, before the first, of the warm-up) counted as it ran
        counts.next_block(n_done)
        out.put(("block", list(indices), new, int(n_done), float(cubic)))
        while True:
            try:
                return replies.get(timeout=0.2)
            except queue_mod.Empty:
                if stop.is_set():
                    raise KeyboardInterrupt from None

    last = [time.perf_counter()]

    def callback(iteration, n_total, state, info):
        if stop.is_set():
            raise KeyboardInterrupt
        counts.add(info)
        now = time.perf_counter()
        if now - last[0] >= _REPORT_EVERY:
            last[0] = now
            if _orphaned():
                raise KeyboardInterrupt
            flush()

    synced = _SyncedStop(**{f.name: getattr(rule, f.name) for f in dataclasses.fields(runner.StopRule)}, sync=sync)
    try:
        if prepared is None:
            chains = meth.run(model, list(rngs), n_draws=rule.max_draws, n_warmup=n_warmup, callback=callback,
                              stop=synced)
        else:
            specs = meth.chain_specs(model, list(rngs), n_warmup, prepared=prepared)
            chains = inference.run_specs(list(rngs), specs, n_draws=rule.max_draws, callback=callback, stop=synced)
    except runner.Interrupted as err:
        for c, chain in zip(indices, err.chains):
            out.put(("interrupted", c, _picklable_chain(chain)))
        return
    except KeyboardInterrupt:
        return
    except BaseException as err:  # noqa: BLE001 -- every failure goes back to the caller
        out.put(_error_message(indices[0] if len(indices) == 1 else list(indices), err))
        return
    for c, chain in zip(indices, chains):
        out.put(("chain", c, _picklable_chain(chain)))


def _worker(out, replies, stop, meth, model, indices, rngs, prepared, n_draws, n_warmup, rule=None):
    """Run the chains ``indices`` one after the other (``rule`` None) or together in blocks under
    ``rule`` (:func:`_run_blocks_in_worker`) and put what happens on ``out``.

    Messages: ``("progress", c, n_new, n_total, acceptance_sum, n_acceptance, n_divergent)``, ``("chain", c, Chain)``,
    ``("interrupted", c, Chain | None)`` (then the remaining chains are skipped) and
    ``("error", c, exception | None, type name, message, traceback)``; ``("finished", indices)`` last.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the calling process stops the workers through ``stop``
    from threadpoolctl import threadpool_limits

    from . import approx
    from . import methods as inference

    # failed Laplace/EP fits are tallied per draw and summarised once by gb.sample, not printed per fit
    with threadpool_limits(limits=1), approx.failures_counted():
        if rule is not None:
            _run_blocks_in_worker(out, replies, stop, meth, model, indices, rngs, prepared, n_warmup, rule)
            out.put(("finished", list(indices)))
            return
        for k, (c, rng) in enumerate(zip(indices, rngs)):
            one = meth.for_chains([k])  # this chain alone (its start, if gb.sample was given init)
            # iterations, acceptance sum, its count, last report, divergences
            pending = [0, 0.0, 0, time.perf_counter(), 0]

            def callback(iteration, n_total, state, info, c=c, pending=pending):
                if stop.is_set():
                    raise KeyboardInterrupt
                pending[0] += 1
                acc, n_acc, div = _acceptance_and_divergence(info, iteration < n_warmup)
                pending[1] += acc
                pending[2] += n_acc
                pending[4] += div
                now = time.perf_counter()
                if now - pending[3] >= _REPORT_EVERY or iteration + 1 >= n_total:
                    if _orphaned():
                        raise KeyboardInterrupt
                    out.put(("progress", c, pending[0], int(n_total), pending[1], pending[2], pending[4]))
                    pending[:] = [0, 0.0, 0, now, 0]

            try:
                if prepared is None:
                    chains = one.run(model, [rng], n_draws=n_draws, n_warmup=n_warmup, callback=callback)
                else:
                    specs = one.chain_specs(model, [rng], n_warmup, prepared=prepared)
                    chains = inference.run_specs([rng], specs, n_draws=n_draws, callback=callback)
            except runner.Interrupted as err:
                out.put(("interrupted", c, _picklable_chain(err.chains[0]) if err.chains else None))
                break
            except KeyboardInterrupt:
                out.put(("interrupted", c, None))
                break
            except BaseException as err:  # noqa: BLE001 -- every failure goes back to the caller
                out.put(_error_message(c, err))
                break
            if pending[0]:
                out.put(("progress", c, pending[0], 0, pending[1], pending[2], pending[4]))
            out.put(("chain", c, _picklable_chain(chains[0])))
    out.put(("finished", list(indices)))


def run_chains_in_processes(meth, model, rngs: Sequence[np.random.Generator], *, n_draws: int, n_warmup: int,
                            cores: int, progress=None, stop: runner.StopRule | None = None) -> list[Chain]:
    """The chains of ``meth`` on ``model``, one per generator, in ``cores`` processes; ``meth.run``'s result.

    ``meth.prepare`` runs here first (drawing from the generators as the sequential run does); the
    generators then travel to the workers in that state.  With ``stop`` (``until_converged``) the
    workers advance their chains block by block, as ``runner.run_chains`` does, and after every block
    this process tests the rule on all chains' draws so far (and the budgets: draws, O(n^3)
    operations over all chains, seconds) and tells the workers to go on or to stop; as the draws
    are the sequential run's, so are the verdict and the length (a ``seconds`` budget aside).
    ``progress`` (a ``runner.Progress`` or None) receives every chain's iterations (per block under
    ``stop``).  Ctrl-C raises ``runner.Interrupted`` with every chain's draws so far (finished chains
    whole, running ones cut, unstarted ones absent); a worker's exception is raised again here with
    a note naming its chain.
    """
    t0 = time.perf_counter()
    n_chains = len(rngs)
    cores = max(1, min(int(cores), n_chains))
    prepared = meth.prepare(model, rngs, n_warmup)
    ctx = _context()
    out = ctx.Queue()
    rule, stop = stop, ctx.Event()
    groups = [list(range(w, n_chains, cores)) for w in range(cores)]
    replies = [ctx.Queue() for _ in groups] if rule is not None else [None] * cores
    procs = []
    for idx, reply in zip(groups, replies):
        # meth.for_chains: the starts given to gb.sample(init=...) of these chains alone, renumbered as the rngs
        p = ctx.Process(target=_worker, args=(out, reply, stop, meth.for_chains(idx), model, idx,
                                              [rngs[c] for c in idx], prepared, int(n_draws), int(n_warmup), rule),
                        daemon=True)
        procs.append(p)
    chains: dict[int, Chain] = {}
    partial: dict[int, Chain] = {}
    finished: set[int] = set()
    error = None
    blocks: dict[int, list[np.ndarray]] = {c: [] for c in range(n_chains)}
    reported: dict[int, tuple[int, float]] = {}  # worker -> (n_done, its chains' O(n^3) operations)

    def decide(n_done: int, cubic: float):
        """runner._blocks' verdict after a block, on every chain's draws."""
        x = np.stack([np.concatenate(blocks[c]) for c in range(n_chains)])
        lw = None
        if rule.weights is not None:
            x, lw = x[:, :, :-1], x[:, :, -1]
        if runner.converged(x, rule, lw):
            return "converged"
        if n_done >= rule.max_draws:
            return f"budget: {rule.max_draws} draws"
        if cubic >= rule.max_cubic:
            return f"budget: {rule.max_cubic:g} O(n^3) operations"
        if time.perf_counter() - t0 >= rule.max_seconds:
            return f"budget: {rule.max_seconds:g} s"
        return None

    def handle(msg):
        nonlocal error
        kind = msg[0]
        if kind == "block":
            _, idx, new, n_done, cubic = msg
            for c, x in new.items():
                blocks[c].append(x)
            reported[groups.index(idx)] = (n_done, cubic)
            if len(reported) == len(groups) and len({n for n, _ in reported.values()}) == 1:
                verdict = decide(n_done, sum(cb for _, cb in reported.values()))
                reported.clear()
                for reply in replies:
                    reply.put(verdict)
        elif kind == "progress":
            # after Ctrl-C (stop set) the display is not fed: only the chains are collected
            if progress is not None and hasattr(progress, "advance") and not stop.is_set():
                progress.advance(msg[1], msg[2], msg[3], msg[4], msg[5], msg[6])
        elif kind == "chain":
            chains[msg[1]] = msg[2]
        elif kind == "interrupted":
            if msg[2] is not None:
                partial[msg[1]] = msg[2]
        elif kind == "error":
            if error is None:
                error = msg[1:]
            stop.set()
        elif kind == "finished":
            finished.update(msg[1])

    def died() -> list[str]:
        return [f"worker of chains {idx} ended with exit code {p.exitcode}" for p, idx in zip(procs, groups)
                if p.exitcode is not None and p.exitcode != 0 and not set(idx) <= finished]

    try:
        with _main_hidden():
            for p in procs:
                p.start()
        try:
            while len(finished) < n_chains and error is None:
                try:
                    handle(out.get(timeout=0.5))
                except queue_mod.Empty:
                    dead = died()
                    if dead:
                        raise RuntimeError("a chain's worker process died: " + "; ".join(dead))
        except KeyboardInterrupt:
            stop.set()
            deadline = time.monotonic() + _INTERRUPT_GRACE
            try:
                while len(finished) < n_chains and time.monotonic() < deadline and not died():
                    try:
                        handle(out.get(timeout=0.5))
                    except queue_mod.Empty:
                        pass
            except KeyboardInterrupt:  # a second Ctrl-C: keep what came back
                pass
            kept = [chains.get(c, partial.get(c)) for c in range(n_chains)]
            raise runner.Interrupted([c for c in kept if c is not None]) from None
    finally:
        stop.set()
        for p in procs:
            if p.pid is None:  # never started
                continue
            p.join(timeout=5.0 if error is None else 0.5)
            if p.is_alive():
                p.terminate()
                p.join(timeout=5.0)
        out.close()
        for reply in replies:
            if reply is not None:
                reply.close()
    if error is not None:
        c, exc, name, message, tb = error
        c = f"(one of) {c}" if isinstance(c, list) else c
        err = exc if exc is not None else RuntimeError(f"{name}: {message}")
        err.add_note(f"raised in chain {c} (a worker process of gb.sample(cores=...)); "
                     f"cores=1 runs the chains in this process")
        raise err from _RemoteTraceback(tb)
    return [chains[c] for c in range(n_chains)]

