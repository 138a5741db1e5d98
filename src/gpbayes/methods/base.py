"""The base of the method objects: :class:`Method`, the registry of aliases, the field checks, the ArviZ groups.

One frozen dataclass per method (``gpbayes.methods.exact``, ``weighted``, ``latent``, ``sparse``,
``gplvm``).  Its fields are the method's options with their defaults, checked in ``__post_init__``
with the checks here (a bad value stops with a message naming the field and the allowed range).  A
method object knows the models it applies to (:meth:`Method.why_not`) and how to run on one
(:meth:`Method.run`); a method of the one chain runner only builds a chain specification per chain
(:meth:`Method.chain_specs`), so ``until_converged``, progress, seeds and Ctrl-C behave the same for
all of them.

The class statement of a subclass registers its ``aliases`` (the strings ``gb.sample`` accepts,
:func:`registry`); :func:`methods`, :func:`resolve`, the exports of ``gpbayes.methods`` and
``gpbayes``, and the list of defaults in ``gb.sample``'s docstring (:func:`defaults_doc`) read the
registry, so nothing else changes when a method is added.

Defaults: a field backed by a library function has that function's default
(``library`` names the function per field; ``tests/test_methods.py`` compares
them through ``inspect.signature``).  A field whose default is the API's own
says why in ``own_defaults``.

Warm-up: every method's warm-up length is ``gb.sample``'s ``n_warmup``
(burn-in of random-walk MH and slice sampling, dual-averaging of HMC/NUTS,
F&G's adaptive phase of pseudo-marginal MH, Stan's windows of joint HMC,
the burn-in of the GPLVM sampler).
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
import textwrap
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import xarray as xr

from .. import io
from ..mcmc import runner
from ..mcmc.runner import Chain
from ..models import GPRegressor, PoissonGP

__all__ = ["Method", "registry", "method_classes", "methods", "resolve", "run_specs", "run_sequentially",
           "posterior_groups", "defaults_doc", "deprecated_warmup", "chain_starts"]

#: alias -> (method class, the fields the alias fixes), filled by ``Method.__init_subclass__``
_ALIASES: dict[str, tuple[type, dict]] = {}


def registry() -> dict[str, tuple[type, dict]]:
    """A copy of the alias table: ``{alias: (method class, fields the alias fixes)}``."""
    return dict(_ALIASES)


def method_classes(package: str = "gpbayes.methods") -> dict[str, type]:
    """The method classes the registry holds whose module is in ``package`` (the library's own by
    default; a class a user or a test registers elsewhere is left out), by name, in registration order."""
    out: dict[str, type] = {}
    for cls, _ in _ALIASES.values():
        if cls.__module__.startswith(package + ".") and cls.__name__ not in out:
            out[cls.__name__] = cls
    return out


# ---------------------------------------------------------------------------
# checks of one field (messages name the field and the allowed values)
# ---------------------------------------------------------------------------
def _name(obj, field: str) -> str:
    return f"{type(obj).__name__}.{field}"


def _int(obj, field: str, minimum: int = 1, *, optional: bool = False) -> None:
    v = getattr(obj, field)
    if optional and v is None:
        return
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < minimum:
        allowed = f"an integer >= {minimum}" + (" or None" if optional else "")
        raise ValueError(f"{_name(obj, field)} must be {allowed}, got {v!r}")
    object.__setattr__(obj, field, int(v))


def _float(obj, field: str, low: float = -math.inf, high: float = math.inf, *, open_low: bool = True,
           open_high: bool = True, optional: bool = False) -> None:
    v = getattr(obj, field)
    if optional and v is None:
        return
    ok = isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(float(v))
    if ok:
        x = float(v)
        ok = (x > low if open_low else x >= low) and (x < high if open_high else x <= high)
    if not ok:
        lo = "(" if open_low else "["
        hi = ")" if open_high else "]"
        raise ValueError(f"{_name(obj, field)} must be a number in {lo}{low:g}, {high:g}{hi}"
                         + (" or None" if optional else "") + f", got {v!r}")
    object.__setattr__(obj, field, float(v))


def _choice(obj, field: str, allowed: Sequence, *, optional: bool = False) -> None:
    v = getattr(obj, field)
    if optional and v is None:
        return
    if v not in allowed:
        raise ValueError(f"{_name(obj, field)} must be one of {list(allowed)}" + (" or None" if optional else "")
                         + f", got {v!r}")


def _bool(obj, field: str) -> None:
    v = getattr(obj, field)
    if not isinstance(v, (bool, np.bool_)):
        raise ValueError(f"{_name(obj, field)} must be True or False, got {v!r}")
    object.__setattr__(obj, field, bool(v))


def _matrix(obj, field: str) -> None:
    """A square matrix given as an array: stored as a tuple of tuples (frozen, comparable, JSON-able)."""
    v = getattr(obj, field)
    if v is None:
        return
    a = np.asarray(v, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] != a.shape[1] or not np.all(np.isfinite(a)):
        raise ValueError(f"{_name(obj, field)} must be a finite square matrix or None, got shape {a.shape}")
    object.__setattr__(obj, field, tuple(tuple(float(x) for x in row) for row in a))


def _lazy(module: str, name: str) -> Callable:
    """The library function ``module.name`` (imported when the defaults test asks)."""

    def get():
        import importlib

        return getattr(importlib.import_module(f"gpbayes.{module}"), name)

    return get




def _json_value(v):
    if isinstance(v, tuple):
        return [_json_value(x) for x in v]
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    return repr(v)


# ---------------------------------------------------------------------------
# the base class
# ---------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Method:
    """An inference method of ``gb.sample``: its options (the fields) and how it runs.

    Class attributes a method sets:

    * ``aliases`` ``{string: {field: value}}``: the strings ``gb.sample``
      accepts for it and the fields each fixes (``{"aa": {"representation": "aa"}}``);
    * ``models``: the model classes it applies to (``why_not`` may refuse more);
    * ``stoppable``: runs under ``until_converged`` (a method of the chain runner);
    * ``independent_chains``: chain c's draws depend only on generator c once :meth:`prepare`
      has run, so ``gb.sample(..., cores=k)`` may run the chains in separate processes
      (``gpbayes.parallel``) with the draws of the sequential run (default False: in-process);
    * ``library``: ``{field: function}``, the library function whose keyword
      of the same name holds the field's default (``library_names`` maps a
      field to another keyword name); ``own_defaults``: ``{field: reason}``
      for defaults that belong to the API.

    A method of the chain runner implements :meth:`chain_specs`; others
    override :meth:`run` (and :meth:`to_groups` when the result is not a list
    of chains).
    """

    aliases: ClassVar[Mapping[str, Mapping[str, Any]]] = {}
    models: ClassVar[tuple[type, ...]] = ()
    stoppable: ClassVar[bool] = False
    independent_chains: ClassVar[bool] = False
    library: ClassVar[Mapping[str, Callable]] = {}
    library_names: ClassVar[Mapping[str, str]] = {}
    own_defaults: ClassVar[Mapping[str, str]] = {}
    #: the parts of a chain's start that ``gb.sample(..., init=...)`` may give (:func:`chain_starts`):
    #: ``"psi"`` (always first), ``"f"`` (the latent values of AA/SURR and the slice representations),
    #: ``"v"`` (the whitened inducing values of the sparse samplers); () for the methods with no
    #: chain to start (importance sampling, point estimates)
    init_components: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, register: bool = True, **kwargs):
        super().__init_subclass__(**kwargs)
        if not register:
            return
        for alias, fixed in cls.__dict__.get("aliases", {}).items():
            if alias in _ALIASES and _ALIASES[alias][0].__qualname__ != cls.__qualname__:
                raise ValueError(f"method alias {alias!r} is taken by {_ALIASES[alias][0].__name__}")
            _ALIASES[alias] = (cls, dict(fixed))

    # -- identity -----------------------------------------------------------------------------
    @property
    def label(self) -> str:
        """The alias this object equals (``"aa"``, ``"slice-surr-site"``), else the class name."""
        for alias, fixed in type(self).__dict__.get("aliases", {}).items():
            if all(getattr(self, k) == v for k, v in fixed.items()):
                return alias
        return type(self).__name__

    def fields(self) -> dict:
        """Every field with its value (defaults included)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def to_json(self) -> str:
        """The method object as JSON: ``{"class": ..., "fields": {...}}`` (every field, defaults included)."""
        return json.dumps({"class": type(self).__name__,
                           "fields": {k: _json_value(v) for k, v in self.fields().items()}}, sort_keys=True)

    # -- applicability ------------------------------------------------------------------------
    def why_not(self, model) -> str | None:
        """Why this method does not apply to ``model`` (None when it does)."""
        if not isinstance(model, self.models):
            return f"method {self.label!r} does not apply to {type(model).__name__}"
        return None

    def check(self, model) -> None:
        """Stop with a message naming the model and the methods that apply when ``why_not`` says so."""
        reason = self.why_not(model)
        if reason is not None:
            raise ValueError(f"{reason}; choose one of {methods(model)}")

    # -- explicit starts (gb.sample's init) ------------------------------------------------------
    def start_shapes(self, model) -> dict[str, tuple[int, ...]]:
        """The shape of each part of one chain's start (:attr:`init_components`): psi (p,), f (n,),
        v (M, C), Z (n, k_z) of the supervised GPLVM."""
        shapes = {"psi": (len(model.param_names),), "f": (int(model.n),)}
        gplvm = getattr(model, "gplvm", None)
        if gplvm is not None:
            shapes["Z"] = (int(gplvm.n), int(gplvm.latent_dim))
        fit = getattr(model, "svgp_fit", None)
        if fit is not None:
            shapes["v"] = tuple(np.shape(fit.params.m))
        return {k: shapes[k] for k in self.init_components}

    def starting_at(self, starts: Sequence[Mapping[str, np.ndarray]] | None) -> Method:
        """A copy of this method whose chain c starts at ``starts[c]`` (a dict of the parts in
        :attr:`init_components`, as :func:`chain_starts` returns them); None: the method's own starts.
        The starts are not a field: the method's options (``to_json``) are unchanged."""
        out = dataclasses.replace(self)
        object.__setattr__(out, "_starts", None if starts is None else tuple(dict(s) for s in starts))
        return out

    def for_chains(self, indices: Sequence[int]) -> Method:
        """This method for the chains ``indices`` alone (their starts renumbered 0, 1, ...): what a
        worker process running those chains is given (``gpbayes.parallel``)."""
        starts = getattr(self, "_starts", None)
        return self if starts is None else self.starting_at([starts[c] for c in indices])

    def _start(self, c: int) -> dict | None:
        """Chain c's start given to ``gb.sample(init=...)`` (a dict of arrays), or None."""
        starts = getattr(self, "_starts", None)
        return None if starts is None else starts[c]

    # -- running ------------------------------------------------------------------------------
    def prepare(self, model, rngs: Sequence[np.random.Generator], n_warmup: int):
        """What the chains share, computed once before any chain runs, drawing from the generators as
        the sequential run does (e.g. the MAP of the exact marginal from chain 0's generator); with
        ``cores > 1`` it runs in the calling process and travels (pickled) to the workers, which pass
        it to ``chain_specs(..., prepared=...)``.  Default: nothing to share (None; the workers then
        call :meth:`run` with their own generators)."""
        return None

    def chain_specs(self, model, rngs: Sequence[np.random.Generator], n_warmup: int) -> list[runner.ChainSpec]:
        """One ``runner.ChainSpec`` per chain (methods of the chain runner)."""
        raise NotImplementedError(f"{type(self).__name__} is not a method of the chain runner")

    def run(self, model, rngs, *, n_draws: int, n_warmup: int, callback=None, stop=None):
        """Run on ``model``: by default the chain specifications through the one runner.

        Chains run one after the other (``runner.run_spec``), or together in
        blocks under ``stop`` (``runner.run_specs``).  Ctrl-C raises
        ``runner.Interrupted`` carrying the draws of every chain so far.
        """
        return run_specs(rngs, self.chain_specs(model, rngs, n_warmup), n_draws=n_draws, callback=callback, stop=stop)

    def to_groups(self, model, result, rngs, attrs: dict) -> dict[str, xr.Dataset]:
        """The ArviZ groups of ``run``'s result (a list of chains by default)."""
        return posterior_groups(model, result, attrs)


def run_specs(rngs, specs, *, n_draws: int, callback=None, stop=None) -> list[Chain]:
    """The chains of ``specs``: one after the other (``runner.run_spec``), or together in blocks under
    ``stop`` (``runner.run_specs``); either way each chain's draws depend only on its generator."""
    if stop is not None:
        return runner.run_specs(rngs, specs, stop=stop, callback=callback)
    return run_sequentially([lambda r=r, s=s: runner.run_spec(r, s, n_draws=n_draws, callback=callback)
                             for r, s in zip(rngs, specs)])


def run_sequentially(jobs: Sequence[Callable[[], Chain]]) -> list[Chain]:
    """Run the chains one after the other; on Ctrl-C raise ``runner.Interrupted`` with every chain so far
    (the finished ones and the partial one)."""
    done: list[Chain] = []
    for job in jobs:
        try:
            done.append(job())
        except runner.Interrupted as err:
            raise runner.Interrupted(done + list(err.chains)) from None
        except KeyboardInterrupt:
            raise runner.Interrupted(done) from None
    return done


def chain_starts(method: Method, model, init, chains: int) -> tuple[dict[str, np.ndarray], ...]:
    """Each chain's start from ``gb.sample``'s ``init``, checked against ``method`` and ``model``.

    ``init`` is an array (chains, p) of psi (one row per chain), a dict of such arrays with the key
    ``"psi"`` and, for the methods that list them in ``init_components``, ``"f"`` (chains, n) or
    ``"v"`` (chains, M, C), or a callable ``c -> start`` of chain c (an array (p,) of psi or a dict
    of one chain's parts).  Returns one dict of float64 arrays per chain; the parts not given are
    drawn by the method as without ``init``.  Stops with the expected shape when a part's shape,
    a part's name or a value (not finite) is wrong.
    """
    label = method.label
    allowed = method.init_components
    if not allowed:
        takes = sorted(a for a, (cls, _) in _ALIASES.items() if cls.init_components)
        raise ValueError(f"init: method {label!r} has no chains to start (importance sampling and point estimates "
                         f"start from their own q_0 or optimiser); init is for the MCMC methods {takes}")
    shapes = method.start_shapes(model)
    if callable(init):
        per_chain = []
        for c in range(chains):
            got = init(c)
            part = got if isinstance(got, Mapping) else {"psi": got}
            per_chain.append(_check_parts(part, shapes, label, f"init({c})", lead=()))
        return tuple(per_chain)
    part = init if isinstance(init, Mapping) else {"psi": init}
    whole = _check_parts(part, shapes, label, "init", lead=(chains,))
    return tuple({k: v[c].copy() for k, v in whole.items()} for c in range(chains))


def _check_parts(part: Mapping, shapes: Mapping[str, tuple], label: str, where: str,
                 lead: tuple) -> dict[str, np.ndarray]:
    """``part``'s arrays as float64, each of shape lead + shapes[name], finite; "psi" required."""
    unknown = sorted(set(part) - set(shapes))
    if unknown:
        raise ValueError(f"{where}: method {label!r} takes the start parts {list(shapes)}, not {unknown}")
    if "psi" not in part:
        raise ValueError(f"{where}: give 'psi', the log-hyperparameters of shape {lead + shapes['psi']} "
                         f"(the other parts, {[k for k in shapes if k != 'psi']}, are optional)")
    out = {}
    for name, value in part.items():
        want = lead + shapes[name]
        what = {"psi": "log-hyperparameters", "f": "latent values", "v": "whitened inducing values",
                "Z": "latent inputs of the supervised GPLVM"}[name]
        try:
            a = np.array(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"{where}['{name}'] must be an array of {what} of shape {want}, got "
                             f"{type(value).__name__}") from None
        if a.shape != want:
            per = {"psi": "p hyperparameters", "f": "n observations", "v": "(M inducing points, C latent GPs)",
                   "Z": "n observations, k_z latent dimensions"}[name]
            raise ValueError(f"{where}['{name}'] must be an array of {what} of shape {want}"
                             + (" (chains, " if lead else " (") + f"{per}), got shape {a.shape}")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{where}['{name}'] holds NaN or infinite values; a start must be finite")
        out[name] = a
    return out


# ---------------------------------------------------------------------------
# the ArviZ groups
# ---------------------------------------------------------------------------
def _data_groups(model) -> dict[str, xr.Dataset]:
    """``observed_data`` (y) and ``constant_data`` (X, exposure) whose rows share the dim ``obs``.

    X is the model's (standardised) inputs over ``(obs, feature)``, the
    features named after X's columns when it had some; y is on the scale the
    likelihood sees (regression: the original scale of y; classification:
    -1/+1; counts; GPLVM: the standardised outputs over ``(obs, output)``).
    """
    n, d = model.X.shape
    feature = getattr(model, "feature_names", None) or list(range(d))
    const = {"X": (("obs", "feature"), model.X)}
    exposure = getattr(getattr(model, "likelihood", None), "exposure", None)
    if exposure is not None and np.ndim(exposure) == 1:
        const["exposure"] = ("obs", np.asarray(exposure, dtype=np.float64))
    y = model.y_raw if isinstance(model, GPRegressor) else model.y
    y_dims = ("obs",) if np.ndim(y) == 1 else ("obs", "output")
    coords = {"obs": np.arange(n), "feature": feature}
    out = {"constant_data": xr.Dataset(const, coords=coords),
           "observed_data": xr.Dataset({"y": (y_dims, np.asarray(y))}, coords={"obs": np.arange(n)})}
    for g in out.values():
        g.attrs.update(io.arviz_attrs())
    return out


#: dims of the per-draw latent arrays a method records (besides chain, draw)
_LATENT_DIMS = {"f": ("obs",), "v": ("inducing", "latent_gp"), "Z": ("obs", "latent")}


def _hyperparameter_groups(model, psi: np.ndarray, attrs: dict) -> dict[str, xr.Dataset]:
    """``posterior``: the model's hyperparameters (``model.hyperparameters``: ``lengthscale`` over
    ``feature``, ``signal_variance``, ...) on their natural scale, theta = exp(psi), except the
    coordinates the model samples on their own scale (``model.unlogged_names``: a LatentGP's sampled
    constant ``mean_constant``, M&A Sec. 5), reported as they are; ``unconstrained_posterior``
    (ArviZ's group for the sampled, transformed space): the same variables holding psi exactly as
    sampled.  ``psi`` is (chain, draw, p).  A model in ``units="data"`` has ``posterior`` in X's and y's
    units (theta exp(shift), ``model.log_unit_shifts``; ``attrs["units"]``), a hyperparameter with no single
    unit there left standardised and named in ``attrs["standardized_variables"]``; ``unconstrained_posterior``
    stays psi as sampled, on the model's standardised scale (``attrs["units"] = "standardized"``)."""
    unlogged = set(getattr(model, "unlogged_names", ()))
    coords = {"chain": np.arange(psi.shape[0]), "draw": np.arange(psi.shape[1])}
    unc_vars = {}
    for h in model.hyperparameters:
        if h.dim is None:
            unc_vars[h.name] = (("chain", "draw"), psi[:, :, h.index[0]])
        else:
            unc_vars[h.name] = (("chain", "draw", h.dim), psi[:, :, list(h.index)])
            coords[h.dim] = list(h.coords)
    unc = xr.Dataset(unc_vars, coords=coords)
    # units="data": theta in X's and y's units, psi + shift (gpbayes.units); NaN: no single unit, left standardised
    shifts = model.log_unit_shifts() if hasattr(model, "log_unit_shifts") else np.zeros(psi.shape[2])
    kept = np.where(np.isnan(shifts), 0.0, shifts)
    post_vars = {}
    for h in model.hyperparameters:
        dims, v = unc_vars[h.name]
        v = v + (kept[h.index[0]] if h.dim is None else kept[list(h.index)])
        post_vars[h.name] = (dims, v if h.name in unlogged else np.exp(v))
    post = xr.Dataset(post_vars, coords=coords)
    full = {**io.arviz_attrs(), **attrs}
    post.attrs.update(full)
    unc.attrs.update(full)
    units = getattr(model, "units", "standardized")
    post.attrs["units"] = units
    unc.attrs["units"] = "standardized"  # psi exactly as sampled, on the model's scale
    if units == "data" and np.any(np.isnan(shifts)):
        left = [label for label, s in zip(model.hyperparameter_labels, shifts) if np.isnan(s)]
        post.attrs["standardized_variables"] = ", ".join(left)
    return {"posterior": post, "unconstrained_posterior": unc}


def posterior_groups(model, chains: list[Chain], attrs: dict) -> dict[str, xr.Dataset]:
    """The ArviZ groups of MCMC chains (or a point estimate): ``posterior``, ``unconstrained_posterior``,
    ``sample_stats`` (per-draw statistics; per chain the tuning and warm-up cost), ``constant_data``,
    ``observed_data``."""
    groups = io.to_inference_groups(chains, var_name="psi", coords={"param": model.hyperparameter_labels},
                                    attrs=attrs, per_chain_tuning=True)
    kept = groups["posterior"]
    groups.update(_hyperparameter_groups(model, kept["psi"].values, attrs))
    for name, dims in _LATENT_DIMS.items():
        if name in kept:
            groups["posterior"][name] = (("chain", "draw", *dims), kept[name].values)
    groups.update(_data_groups(model))
    return groups


def _point(psi, lp) -> list[Chain]:
    return [Chain(draws=np.asarray(psi)[None, :], stats={"lp": np.array([lp])}, warmup={}, params={}, state=None)]


# ---------------------------------------------------------------------------
# checks shared by the methods of the latent-Gaussian models (latent.py, weighted.py)
# ---------------------------------------------------------------------------
_APPROXIMATIONS = ("laplace", "ep")


def _approximation_problem(model, approx: str) -> str | None:
    offered = model.likelihood.approximations  # the likelihood protocol (gpbayes.likelihoods)
    if approx not in offered:
        return (f"{type(model).__name__} with the {model.likelihood.name} likelihood: approximation {approx!r} "
                f"is not offered (EP is implemented for the probit and the likelihoods that list it); use one of "
                f"{list(offered)}")
    return None


def _pm_target(model, approx: str, n_imp: int, approx_options: dict | None = None):
    from ..estimators.importance import PseudoMarginalTarget

    return PseudoMarginalTarget(model.X, model.y, model.kernel, model.likelihood, model.prior, approx=approx,
                                n_imp=n_imp, approx_options=dict(approx_options or {}))


def _estimator_problem(model, approx: str | None) -> str | None:
    """Why F&G's importance estimator (eq. 25) cannot serve ``model`` with the Gaussian ``approx``: a
    PoissonGP with per-bin exposure (the estimator takes a scalar exposure), or an approximation the
    likelihood does not offer (None: not checked).  None when it can."""
    if isinstance(model, PoissonGP) and np.ndim(model.likelihood.exposure) > 0:
        return ("PoissonGP with per-bin exposure: the importance estimator takes a scalar exposure; "
                "use method 'aa', 'surr' or 'slice-<representation>'")
    return None if approx is None else _approximation_problem(model, approx)


def _check_option_first(method: Method, model) -> None:
    """A model the method applies to with an option it does not allow: the option's message alone."""
    reason = method.why_not(model)
    if reason is not None and isinstance(model, method.models):
        raise ValueError(reason)
    Method.check(method, model)


# ---------------------------------------------------------------------------
# strings as aliases
# ---------------------------------------------------------------------------
def methods(model) -> tuple[str, ...]:
    """The method strings ``gb.sample`` accepts for this model (the aliases of the methods that apply)."""
    return tuple(a for a, (cls, fixed) in _ALIASES.items() if cls(**fixed).why_not(model) is None)


def resolve(method, options: Mapping[str, Any] | None = None) -> Method:
    """The method object of ``method`` (a string alias with ``options``, or a :class:`Method`)."""
    options = dict(options or {})
    if isinstance(method, Method):
        if options:
            raise ValueError(f"options {sorted(options)} given beside the method object {type(method).__name__}; "
                             "set them as its fields instead")
        return method
    if isinstance(method, type) and issubclass(method, Method):
        return method(**options)
    if not isinstance(method, str) or method not in _ALIASES:
        raise ValueError(f"method must be a gpbayes method object or one of {sorted(_ALIASES)}, got {method!r}")
    cls, fixed = _ALIASES[method]
    names = [f.name for f in dataclasses.fields(cls) if f.name not in fixed]
    unknown = sorted(set(options) - set(names))
    if unknown:
        raise ValueError(f"method {method!r} has no option(s) {unknown}; its options are {names}")
    return cls(**fixed, **options)


def deprecated_warmup(options: dict, n_warmup: int | None, warmup: int | None) -> int | None:
    """``n_warmup``, accepting the old names ``warmup`` (``gb.sample``) and ``n_adapt`` (pseudo-marginal)
    with a DeprecationWarning."""
    for old, value in (("warmup", warmup), ("n_adapt", options.pop("n_adapt", None))):
        if value is None:
            continue
        warnings.warn(f"'{old}' is deprecated; use n_warmup", DeprecationWarning, stacklevel=3)
        if n_warmup is not None and n_warmup != value:
            raise ValueError(f"n_warmup={n_warmup} and {old}={value} disagree; give n_warmup only")
        n_warmup = value
    return n_warmup


def defaults_doc(indent: int = 0) -> str:
    """The list of every library method object with its aliases, the models it applies to and the
    default of each field, one bullet per class in registration order (reStructuredText, ``indent``
    spaces deep): ``gb.sample``'s docstring shows it, generated here from the registry."""
    pad = " " * indent
    out = []
    for name, cls in method_classes().items():
        aliases = ", ".join(f'"{a}"' for a in cls.__dict__.get("aliases", {}))
        models = ", ".join(m.__name__ for m in cls.models)
        opts = ", ".join(f"``{f.name}={f.default!r}``" for f in dataclasses.fields(cls)) or "no options"
        out.append(textwrap.fill(f"* ``{name}`` ({aliases}; {models}): {opts}.", width=100, initial_indent=pad,
                                 subsequent_indent=pad + "  ", break_long_words=False, break_on_hyphens=False))
    return "\n".join(out) + "\n"
