"""Slice sampling (Neal 2003) for hyperparameters; the one slice sampler of both papers.

Two papers use it:

* Xiong, Smidl & Filippone (AMIS for GPs), Sec. 4.3.1: "component-wise
  updates of the parameters, where a new sample is drawn according to the
  'stepping out' and 'shrinkage' procedures as described in Neal (2003b)
  ... we set the estimate of the typical size of a slice w to 1.5"
  -> ``neal_step`` (= ``step`` with ``step_out=inf``, ``width=1.5``).
* Murray & Adams (2010), Alg. 4: random placement of a bracket of width
  sigma around the current point, then shrinkage; "Stepping-out procedures
  [2] could be used to adapt initial scales that are too small"
  -> ``murray_adams_step`` (= ``step`` with ``step_out=0`` by default).

Both are the same univariate update (``univariate_update``); they differ
only in whether the bracket is stepped out.  Neal's Fig. 3 *starts* with
exactly M&A's random placement (``L = x0 - w U, R = L + w``), so M&A's
Alg. 4 is Neal's procedure with the stepping-out loop switched off.

One univariate update of coordinate k, with the step numbers of Neal (2003)
Figs. 3 and 5 and of Murray & Adams' Alg. 4 (M&A steps 1-2, surrogate data
and whitened variables, belong to the *caller*: they fix the auxiliaries of
``log_density_fn`` for the whole sweep, see ``gpbayes.representations``):

1. (Neal: "draw y ~ U(0, f(x0))"; M&A steps 4-5) slice threshold
   log y = log f(x0) - e, e ~ Exp(1) (Neal Sec. 4, to work in log space);
2. (Neal Fig. 3 first lines; M&A step 3) randomly place the bracket:
   U ~ U(0, 1), L = x0 - w U, R = L + w;
3. (Neal Fig. 3, optional) step out: with V ~ U(0, 1), J = floor(m V),
   K = (m - 1) - J, extend L by w while J > 0 and y < f(L), then R while
   K > 0 and y < f(R);  m = ``step_out`` (0 = off, ``inf`` = unlimited, as
   in Murray's released ``slice_sweep``);
4. (Neal Fig. 5; M&A step 6) draw x1 ~ U(L, R);
5. (Neal Fig. 5; M&A steps 8-13) if y < f(x1) accept x1; otherwise shrink
   (x1 < x0: L = x1, else R = x1) and go to 4.

With stepping out (not doubling) no extra acceptance test is needed (Neal
2003, Sec. 4.2-4.3).

Several coordinates
-------------------
``scheme="componentwise"`` (default) applies the univariate update to each
coordinate in turn (a fresh threshold for each), in a fixed order
(``order="fixed"``) or a fresh random permutation per sweep
(``order="random"``, as in Murray's released ``slice_sweep.m``; the paper
itself says only that the moves are axis-aligned).
``scheme="hyperrectangle"`` is Neal (2003) Sec. 5.1, Fig. 8: one threshold,
a randomly placed box of widths w_i, and shrinkage of every coordinate
towards x0 after each rejected point; stepping out is not available (Neal:
it would cost exponentially many evaluations in the dimension).

Which one Murray & Adams use: axis-aligned, component-wise updates.  Their
Alg. 4 is written "for a scalar hyperparameter theta" and Sec. 3.1 says
"We assume that axis-aligned hyperparameter moves will be effective,
although reparameterizations could improve performance".  Component-wise
updates suit GP hyperparameters because the coordinates (log lengthscales,
log amplitude, log noise) have very different posterior widths: each
coordinate shrinks (and, optionally, steps out) its own bracket, while a
hyper-rectangle shrinks *all* sides whenever any one coordinate lands off
the slice, so its box collapses to the narrowest coordinate's scale.

``log_density_fn(x)`` returns a float or any object with a ``log_density``
attribute (e.g. ``representations.Evaluation``); that object is kept in
``SliceState.aux`` for the accepted point so a caller can reuse what was
computed there (f(psi, a), Cholesky factors).  It takes no generator: slice
sampling needs an exact (non-noisy) log density.  -inf (outside the support,
failed factorisation) is simply "off the slice"; NaN raises.
"""

from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple

import numpy as np

from .. import linalg
from . import runner
from .runner import Chain

__all__ = [
    "SliceState",
    "SliceInfo",
    "init",
    "univariate_update",
    "step",
    "neal_step",
    "murray_adams_step",
    "chain_spec",
    "run_chain",
    "MAX_SHRINKAGES",
    "XIONG_WIDTH",
]

LogDensityFn = Callable[[np.ndarray], Any]

#: Safety stop for shrinkage: the bracket always contains x0, which is on the
#: slice, so the loop ends with probability one; this many shrinkages (a
#: bracket ~2^-200 of its start) means the log density is broken at x0.
MAX_SHRINKAGES = 200
#: Safety stop for unlimited stepping out (``step_out=inf``): an improper
#: density, or a width far too small for the slice.
MAX_STEPS_OUT = 100_000
#: w of Xiong et al. Sec. 4.3.1.
XIONG_WIDTH = 1.5


class SliceState(NamedTuple):
    """State of slice sampling (Neal 2003): the position, its log density and what the density
    function returned beside it (``aux``).
    """

    position: np.ndarray
    log_density: float
    aux: Any = None  # what log_density_fn returned at ``position`` (if not a float)


class SliceInfo(NamedTuple):
    """What one slice update did (Neal 2003, Figs. 3 and 5): density evaluations, steps out and
    shrinkages, O(n^3) operations; it always moves.
    """

    accepted: bool  # always True: slice samplers always move
    acceptance_prob: float  # always 1.0
    n_cubic: int  # O(n^3) operations spent by this step (gpbayes.linalg counter)
    n_density_evals: int  # = n_steps_out + n_shrinkages + number of updates
    n_shrinkages: int
    n_steps_out: int  # evaluations made by stepping out (0 without it)


def _evaluate(fn: LogDensityFn, x: np.ndarray) -> tuple[float, Any]:
    out = fn(x)
    if isinstance(out, (float, int, np.floating, np.integer)):
        value, aux = float(out), None
    else:
        value, aux = float(out.log_density), out
    if math.isnan(value):
        raise FloatingPointError(f"log-density is NaN at {np.array2string(x, precision=4)}")
    return value, aux


def init(position, log_density_fn: LogDensityFn) -> SliceState:
    """State at ``position``; its log density must be finite."""
    x = np.array(position, dtype=np.float64)
    value, aux = _evaluate(log_density_fn, x)
    if not math.isfinite(value):
        raise ValueError(f"initial position {x} has log density {value}; a slice needs f(x0) > 0")
    return SliceState(x, value, aux)


def _check_step_out(step_out) -> float:
    m = float(step_out)
    if not (m == 0 or m >= 1):
        raise ValueError(f"step_out is Neal's m (0 = off, >= 1, or inf), got {step_out!r}")
    return m


def univariate_update(
    rng: np.random.Generator,
    x0: float,
    log_y: float,
    f1d: Callable[[float], tuple[float, Any]],
    width: float,
    step_out: float = 0,
) -> tuple[float, float, Any, int, int, int]:
    """Steps 2-5 for a scalar: returns (x1, log f(x1), aux, n_evals, n_shrinkages, n_steps_out).

    ``f1d(x) -> (log f(x), aux)``; ``log_y`` is the threshold of step 1.
    """
    if not width > 0:
        raise ValueError(f"slice width must be positive, got {width}")
    m = _check_step_out(step_out)
    n_evals = 0
    # step 2: randomly place a bracket of width w around x0 (M&A step 3:
    # v ~ U(0, sigma), theta_min = theta - v, theta_max = theta_min + sigma)
    left = x0 - width * rng.uniform()
    right = left + width
    # step 3: stepping out (Neal Fig. 3), at most m - 1 steps in all
    n_out = 0
    if m >= 1:
        if math.isinf(m):
            j = k = MAX_STEPS_OUT
        else:
            j = math.floor(m * rng.uniform())
            k = int(m - 1) - j
        while j > 0:
            n_out += 1
            if not f1d(left)[0] > log_y:
                break
            left -= width
            j -= 1
            if math.isinf(m) and j == 0:
                raise RuntimeError(f"stepping out went {MAX_STEPS_OUT} widths left: improper density?")
        while k > 0:
            n_out += 1
            if not f1d(right)[0] > log_y:
                break
            right += width
            k -= 1
            if math.isinf(m) and k == 0:
                raise RuntimeError(f"stepping out went {MAX_STEPS_OUT} widths right: improper density?")
    n_evals += n_out
    # steps 4-5: shrinkage (Neal Fig. 5; M&A steps 6-14)
    n_shrink = 0
    while True:
        x1 = left + rng.uniform() * (right - left)  # step 4
        value, aux = f1d(x1)
        n_evals += 1
        if value > log_y:  # step 5: on the slice
            return x1, value, aux, n_evals, n_shrink, n_out
        if x1 < x0:
            left = x1
        else:
            right = x1
        n_shrink += 1
        if n_shrink >= MAX_SHRINKAGES:
            raise RuntimeError(
                f"slice sampling shrank the bracket {n_shrink} times around x0 = {x0!r} without "
                f"finding a point above the slice (log f(x0) is inconsistent or discontinuous)"
            )


def _widths(width, p: int) -> np.ndarray:
    w = np.broadcast_to(np.asarray(width, dtype=np.float64), (p,)).copy()
    if not np.all(w > 0):
        raise ValueError(f"slice widths must be positive, got {width!r}")
    return w


def _componentwise(rng, state, fn, widths, step_out, order):
    x = state.position
    value, aux = state.log_density, state.aux
    p = x.shape[0]
    coords = rng.permutation(p) if order == "random" else range(p)
    tot_evals = tot_shrink = tot_out = 0
    for k in coords:
        base = x

        def f1d(t, base=base, k=k):
            z = base.copy()
            z[k] = t
            return _evaluate(fn, z)

        # step 1: a fresh threshold for each coordinate's update
        log_y = value - rng.standard_exponential()
        t, value, aux, n_ev, n_sh, n_out = univariate_update(
            rng, float(base[k]), log_y, f1d, float(widths[k]), step_out
        )
        x = base.copy()
        x[k] = t
        tot_evals += n_ev
        tot_shrink += n_sh
        tot_out += n_out
    return SliceState(x, value, aux), tot_evals, tot_shrink, tot_out


def _hyperrectangle(rng, state, fn, widths):
    x0 = state.position
    p = x0.shape[0]
    # step 1: one threshold for the whole update
    log_y = state.log_density - rng.standard_exponential()
    # step 2: randomly place the box (Neal Fig. 8)
    left = x0 - widths * rng.uniform(size=p)
    right = left + widths
    n_shrink = 0
    while True:
        x1 = left + rng.uniform(size=p) * (right - left)  # step 4
        value, aux = _evaluate(fn, x1)
        if value > log_y:  # step 5
            return SliceState(x1, value, aux), n_shrink + 1, n_shrink, 0
        below = x1 < x0  # shrink every side towards x0
        left = np.where(below, x1, left)
        right = np.where(below, right, x1)
        n_shrink += 1
        if n_shrink >= MAX_SHRINKAGES:
            raise RuntimeError(
                f"hyper-rectangle slice sampling shrank {n_shrink} times around "
                f"{np.array2string(x0, precision=4)} without finding a point on the slice"
            )


def step(
    rng: np.random.Generator,
    state: SliceState,
    log_density_fn: LogDensityFn,
    width,
    *,
    step_out: float = 0,
    scheme: str = "componentwise",
    order: str = "fixed",
) -> tuple[SliceState, SliceInfo]:
    """One slice-sampling sweep (component-wise) or update (hyper-rectangle).

    ``width`` is w (Neal) or sigma (M&A): a scalar or one per coordinate.
    ``step_out`` is Neal's m: 0 = no stepping out, inf = unlimited.
    """
    if scheme not in ("componentwise", "hyperrectangle"):
        raise ValueError(f"scheme must be 'componentwise' or 'hyperrectangle', got {scheme!r}")
    if order not in ("fixed", "random"):
        raise ValueError(f"order must be 'fixed' or 'random', got {order!r}")
    m = _check_step_out(step_out)
    widths = _widths(width, state.position.shape[0])
    with linalg.count_ops() as ops:
        if scheme == "componentwise":
            new, n_ev, n_sh, n_out = _componentwise(rng, state, log_density_fn, widths, m, order)
        else:
            if m != 0:
                raise ValueError("the hyper-rectangle update has no stepping out (Neal 2003, Sec. 5.1)")
            new, n_ev, n_sh, n_out = _hyperrectangle(rng, state, log_density_fn, widths)
    return new, SliceInfo(True, 1.0, ops.cubic, n_ev, n_sh, n_out)


def neal_step(rng, state, log_density_fn, width=XIONG_WIDTH, *, step_out=math.inf, order="fixed"):
    """Xiong et al.'s SS competitor: component-wise, stepping out and shrinkage, w = 1.5."""
    return step(rng, state, log_density_fn, width, step_out=step_out, order=order)


def murray_adams_step(rng, state, log_density_fn, sigma, *, step_out=0, order="random"):
    """Murray & Adams Alg. 4 applied axis by axis: random bracket of width sigma, shrinkage.

    ``step_out=inf`` adds unlimited stepping out ("could be used to adapt
    initial scales that are too small").
    """
    return step(rng, state, log_density_fn, sigma, step_out=step_out, order=order)


def chain_spec(position0, log_density_fn: LogDensityFn, width, *, n_burn: int = 0,
               **step_options) -> runner.ChainSpec:
    """Slice sampling with a fixed width w, the runner configuration of one chain (``runner.ChainSpec``)."""
    def kernel(r, st):
        return step(r, st, log_density_fn, width, **step_options)

    return runner.ChainSpec(lambda: init(position0, log_density_fn), kernel, int(n_burn))


def run_chain(
    rng: np.random.Generator,
    position0,
    log_density_fn: LogDensityFn,
    width,
    *,
    n_draws: int,
    n_burn: int = 0,
    callback=None,
    **step_options,
) -> Chain:
    """``n_burn`` discarded sweeps, then ``n_draws`` kept ones (no tuning: w is fixed).

    Returns a :class:`~gpbayes.mcmc.runner.Chain` (stats ``lp``, ``n_cubic``,
    ``n_likelihood`` density evaluations, ``n_shrinkages``, ``n_steps_out``,
    ``wall_time`` per sweep; burn-in and initial-evaluation cost in ``warmup``).
    """
    spec = chain_spec(position0, log_density_fn, width, n_burn=n_burn, **step_options)
    return runner.run_spec(rng, spec, n_draws=n_draws, callback=callback)
