"""A result that carries its model: ``gb.predict(idata, X_new)`` with no model rebuilt by hand (issue 41, point 3).

``gb.sample`` records what ``predict`` / ``sample_posterior_predictive`` need in the result itself:

* ``idata.attrs["gpbayes_model"]``: a declarative JSON spec (``spec_version`` :data:`SPEC_VERSION`) --
  the model's class, its kernel, mean, likelihood and prior as constructor arguments of the library's
  classes (:func:`component_spec`: ``{"class": "kernels.SquaredExponential", "args": {...}}``, a
  registry keyed by the public class name, the arguments the classes' dataclass fields), the
  standardisation constants, the column names, the settings (``sample_offset``, ``n_quad``, ...), the
  classes of a classifier, the hyperparameter labels, n, and SHA-256 hashes of the training data and of
  the fit the sparse / GPLVM models start from.  Floats are written by ``json`` as ``repr`` does, which
  reads back to the same double, so the rebuilt model is the sampled one bit for bit.  No pickle.
* the arrays in ArviZ groups: X (standardised) in ``constant_data``, y in ``observed_data`` (as
  ``gb.sample`` always wrote them), and the Gaussian fit of a :class:`~gpbayes.models.SparseGP`
  (``svgp_m``, ``svgp_R``, ``svgp_Z``, ``svgp_psi``) or the type-II ML fit of a
  :class:`~gpbayes.models.GPLVMRegressor` (``ml_psi``, ``ml_whitened_mean``, ``ml_log_lambda``,
  ``ml_inducing``, ``ml_all_bounds``) in ``constant_data``.

:func:`rebuild` makes the model again from a result (read back with ``az.from_netcdf`` in another
process, say): the model's constructor on the stored, already standardised data with
``standardize=False`` (so nothing is standardised twice), the column names and the stored fit, then
the recorded standardisation constants put back.  A kernel, mean or likelihood of the user's own
classes cannot be described: the result still saves, and :func:`rebuild` stops naming the component
and saying to pass the model (a prior of one's own is replaced by the model's default: the
predictions do not read the prior).  :func:`check_model` refuses a model given with a result that
was sampled from another one (its class, hyperparameters, kernel, likelihood, mean, n, data or fit
differ); :func:`resolve` reads the arguments of ``gb.predict(model, idata, X_new)`` and
``gb.predict(idata, X_new)`` alike.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import warnings

import numpy as np

__all__ = ["SPEC_VERSION", "ATTR", "component_spec", "component_from_spec", "describe", "attach", "rebuild",
           "check_model", "resolve", "is_result"]

#: the version of the spec layout; :func:`rebuild` reads this version and refuses a later one
SPEC_VERSION = 1
#: the top-level attribute of a ``gb.sample`` result that holds the spec (a JSON string)
ATTR = "gpbayes_model"


class _Undescribable(Exception):
    """An object of a class outside the registry (a user's own kernel, likelihood, prior)."""

    def __init__(self, obj):
        cls = type(obj)
        super().__init__(f"{cls.__module__}.{cls.__qualname__}")


def _registry() -> dict[str, type]:
    """Public name -> class of every component the spec describes: the library's kernels, means,
    likelihoods and priors (frozen dataclasses, rebuilt from their fields) and the robust-max likelihood."""
    from . import kernels, likelihoods, means, priors
    from .sparse import multiclass

    table = {"kernels": (kernels, ("SquaredExponential", "Matern12", "Matern32", "Matern52", "RationalQuadratic",
                                   "Periodic", "Linear", "White", "Constant", "Cosine", "Polynomial", "Sum",
                                   "Product", "Scaled", "Fixed")),
             "means": (means, ("Constant", "Linear", "MeanKernel")),
             "likelihoods": (likelihoods, ("Probit", "Logistic", "Gaussian", "Poisson")),
             "priors": (priors, ("Gamma", "InverseGamma", "LogNormal", "Uniform", "LogUniform", "HalfNormal",
                                 "Exponential", "HalfCauchy", "DataUnits", "IndependentPrior")),
             "sparse.multiclass": (multiclass, ("RobustMax",))}
    return {f"{prefix}.{name}": getattr(module, name) for prefix, (module, names) in table.items() for name in names}


def _encode(value):
    """A constructor argument as JSON: numbers, strings, None; tuples as ``{"tuple": [...]}``, arrays as
    ``{"array": [...], "dtype": ...}``, registered components as their spec; anything else is undescribable."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (np.bool_, np.integer, np.floating)):
        return value.item()
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, tuple):
        return {"tuple": [_encode(v) for v in value]}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        return {"array": value.tolist(), "dtype": str(value.dtype)}
    return component_spec(value)


def _decode(value):
    """The inverse of :func:`_encode`."""
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "tuple" in value:
        return tuple(_decode(v) for v in value["tuple"])
    if "array" in value:
        return np.asarray(value["array"], dtype=value["dtype"])
    return component_from_spec(value)


def component_spec(obj) -> dict:
    """``{"class": <public name>, "args": {field: value}}`` of a library kernel, mean, likelihood or prior
    (its dataclass fields: the constructor's arguments, nested components as specs).  A class outside the
    registry (a subclass included) raises the module's ``_Undescribable`` with its qualified name."""
    keys = {cls: key for key, cls in _registry().items()}
    key = keys.get(type(obj))
    if key is None or not dataclasses.is_dataclass(obj):
        raise _Undescribable(obj)
    return {"class": key, "args": {f.name: _encode(getattr(obj, f.name)) for f in dataclasses.fields(obj) if f.init}}


def component_from_spec(spec: dict):
    """The component a :func:`component_spec` describes: its class called with the decoded arguments."""
    cls = _registry().get(spec.get("class"))
    if cls is None:
        raise ValueError(f"unknown component {spec.get('class')!r} in the saved model spec; known: "
                         f"{sorted(_registry())}")
    return cls(**{k: _decode(v) for k, v in spec["args"].items()})


def _described(obj):
    """A component's spec, ``{"undescribable": "<module>.<class>"}`` for a class of the user's own, None for None."""
    if obj is None:
        return None
    try:
        return component_spec(obj)
    except _Undescribable as err:
        return {"undescribable": str(err)}


def _sha256(*arrays) -> str:
    """SHA-256 of arrays as float64 (shape and bytes, C order)."""
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(np.asarray(a, dtype=np.float64))
        h.update(repr(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _training_arrays(model) -> tuple[np.ndarray, np.ndarray]:
    """X and y as ``gb.sample`` writes them to ``constant_data`` / ``observed_data`` (``methods.base._data_groups``)."""
    from .models import GPRegressor

    return model.X, (model.y_raw if isinstance(model, GPRegressor) else model.y)


def _fit_arrays(model) -> dict[str, tuple[tuple, np.ndarray]]:
    """The fit a sparse GP (the SVGP fit: q(v), Z, psi) or GPLVM (type-II ML: psi, q(Z), inducing inputs)
    starts from, as ``constant_data`` variables name -> (dims, values); {} for the other models."""
    from .models import GPLVMRegressor, SparseGP

    if isinstance(model, SparseGP):
        p = model.svgp_fit.params
        return {"svgp_m": (("inducing", "latent_gp"), p.m), "svgp_R": (("latent_gp", "inducing", "inducing_col"), p.R),
                "svgp_Z": (("inducing", "feature"), p.Z), "svgp_psi": (("svgp_param",), p.psi)}
    if isinstance(model, GPLVMRegressor):
        f = model.ml_fit
        return {"ml_psi": (("ml_param",), f.psi), "ml_whitened_mean": (("obs", "latent"), f.params.whitened_mean),
                "ml_log_lambda": (("obs", "latent"), f.params.log_lambda),
                "ml_inducing": (("ml_inducing_point", "latent"), f.params.inducing),
                "ml_all_bounds": (("ml_restart",), np.atleast_1d(np.asarray(f.all_bounds, dtype=np.float64)))}
    return {}


def _user_kernel(model):
    """The kernel the user gave (or the default): ``model.kernel`` unwrapped from a mean's ``MeanKernel``."""
    kernel = model.kernel
    return kernel.kernel if model.mean is not None else kernel


def describe(model) -> dict:
    """The spec of ``model`` (a dict; ``json.dumps`` of it is ``attrs["gpbayes_model"]``): see the module
    docstring.  Components of the user's own classes are recorded as ``{"undescribable": name}``."""
    from . import __version__
    from .models import GPClassifier, GPLVMRegressor, GPRegressor, LatentGP, SparseGP

    X, y = _training_arrays(model)
    spec = {"spec_version": SPEC_VERSION, "gpbayes_version": __version__, "model": type(model).__name__,
            "n": int(model.n), "d": int(model.X.shape[1]), "feature_names": getattr(model, "feature_names", None),
            "hyperparameters": list(model.hyperparameter_labels), "standardize": bool(model.standardize),
            "units": str(getattr(model, "units", "standardized")),
            "x_shift": _encode(np.asarray(model.x_shift, dtype=np.float64)),
            "x_scale": _encode(np.asarray(model.x_scale, dtype=np.float64)),
            "kernel": None if isinstance(model, GPLVMRegressor) else _described(_user_kernel(model)),
            "mean": _described(model.mean), "likelihood": _described(getattr(model, "likelihood", None)),
            "prior": _described(model.prior), "classes": _encode(getattr(model, "classes", None)),
            "data_sha256": _sha256(X, y)}
    fits = _fit_arrays(model)
    if fits:
        spec["fit_sha256"] = _sha256(*(v for _, v in fits.values()))
    if isinstance(model, (GPRegressor, GPLVMRegressor)):
        spec["y_shift"] = _encode(model.y_shift if isinstance(model, GPRegressor) else np.asarray(model.y_shift))
        spec["y_scale"] = _encode(model.y_scale if isinstance(model, GPRegressor) else np.asarray(model.y_scale))
    if isinstance(model, GPRegressor) and getattr(model, "noise", None) is not None:
        spec["settings"] = {"noise": _encode(np.asarray(model.noise, dtype=np.float64))}
    if isinstance(model, LatentGP):
        spec["settings"] = {"sample_offset": bool(model.sample_offset)}
    elif isinstance(model, SparseGP):
        fit = model.svgp_fit
        spec["settings"] = {"n_quad": int(model.target.n_quad), "jitter": float(model.target.jitter),
                            "svgp_elbo": float(fit.elbo), "svgp_success": bool(fit.success),
                            "svgp_n_iter": int(fit.n_iter), "svgp_message": str(fit.message)}
    elif isinstance(model, GPLVMRegressor):
        fit = model.ml_fit
        spec["settings"] = {"latent_dim": int(model.gplvm.latent_dim), "n_inducing": int(model.gplvm.n_inducing),
                            "ml_bound": float(fit.bound), "ml_n_restarts": int(fit.n_restarts)}
    elif isinstance(model, GPClassifier):
        spec["settings"] = {}
    return spec


def attach(model, groups: dict) -> dict:
    """Record ``model`` in the groups of a ``gb.sample`` result before the container is made: the fit
    arrays of a sparse GP / GPLVM are added to ``groups["constant_data"]`` (in place); returns the
    top-level attributes to add, ``{"gpbayes_model": <the spec as a JSON string>}`` (NetCDF attributes
    must be strings or numbers)."""
    fits = _fit_arrays(model)
    if fits and "constant_data" in groups:
        const = groups["constant_data"].copy()
        for name, (dims, values) in fits.items():
            const[name] = (dims, np.asarray(values, dtype=np.float64))
        groups["constant_data"] = const
    return {ATTR: json.dumps(describe(model), allow_nan=True)}


def _spec(idata) -> dict | None:
    """The spec a result carries, None for a result without one (sampled by an earlier gpbayes)."""
    raw = dict(idata.attrs).get(ATTR)
    if raw is None:
        return None
    spec = json.loads(str(raw))
    if int(spec.get("spec_version", 0)) > SPEC_VERSION:
        raise ValueError(f"the result's model spec has version {spec['spec_version']}, this gpbayes reads up to "
                         f"{SPEC_VERSION}: update gpbayes, or pass the model")
    return spec


class _Named:
    """A duck-typed table (``.columns`` and ``__array__``) so that a model's constructor records the column
    names it records for a DataFrame (``models._feature_names``) without pandas."""

    def __init__(self, values: np.ndarray, columns):
        self.values, self.columns = values, list(columns)

    def __array__(self, dtype=None, copy=None):
        return self.values if dtype is None else self.values.astype(dtype)


def _component(spec: dict, what: str, role: str, default=None):
    """A component rebuilt from its spec; an undescribable one stops with what to do."""
    if spec is None:
        return default
    if "undescribable" in spec:
        raise ValueError(f"{what}: the result's model has a {role} of a class gpbayes cannot describe in the saved "
                         f"result ({spec['undescribable']}), so the model cannot be rebuilt from the result: pass "
                         f"the model, {what}(model, idata, ...)")
    return component_from_spec(spec)


def rebuild(idata, what: str = "gb.predict"):
    """The model a ``gb.sample`` result was sampled from, made again from the result alone (see the module
    docstring): equal to the sampled model in every number ``predict`` and ``sample_posterior_predictive``
    read (the data, the standardisation, the kernel, likelihood and mean, the fit of a sparse GP / GPLVM).
    An undescribable prior is replaced by the model's default (the predictions do not read the prior)."""
    from . import io, models
    from .gplvm.vb import MLResult, VariationalParams
    from .sparse.svgp import SVGPFit, SVGPParams

    spec = _spec(idata)
    if spec is None:
        raise ValueError(f"{what}: the result carries no model (it was sampled by a gpbayes before results "
                         f"carried theirs, or not by gb.sample): pass the model, {what}(model, idata, ...)")
    kind = spec["model"]
    const = io.group(idata, "constant_data")
    X = np.asarray(const["X"].values, dtype=np.float64)
    y = np.asarray(io.group(idata, "observed_data")["y"].values)
    if _sha256(X, y) != spec["data_sha256"]:
        raise ValueError(f"{what}: the result's constant_data['X'] / observed_data['y'] are not the data it was "
                         "sampled on (their hash differs from the one recorded); pass the model")
    kernel = _component(spec["kernel"], what, "kernel")
    mean = _component(spec["mean"], what, "mean")
    likelihood = _component(spec["likelihood"], what, "likelihood")
    prior = None if "undescribable" in (spec["prior"] or {}) else _component(spec["prior"], what, "prior")
    names = spec["feature_names"]
    Xin = X if names is None else _Named(X, names)
    settings = spec.get("settings", {})
    fit_names = [k for k in const.data_vars if str(k).startswith(("svgp_", "ml_"))]
    fits = {str(k): np.asarray(const[k].values, dtype=np.float64) for k in fit_names}
    # the stored kernel and prior are the model's own, on its standardised scale (data-unit values given by
    # the user already carried there): rebuilt with units="standardized", the recorded units put back below
    common = {"kernel": kernel, "prior": prior, "standardize": False, "units": "standardized"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the notes the constructor gave at sampling time (labels mapped, ...)
        if kind == "GPRegressor":
            y_std = (y - spec["y_shift"]) / spec["y_scale"]  # the constructor's own arithmetic, bit for bit
            noise = settings.get("noise")
            noise = None if noise is None else _decode(noise) / spec["y_scale"] ** 2  # as the constructor's
            model = models.GPRegressor(Xin, y_std, mean=mean, noise=noise, **common)
        elif kind == "GPClassifier":
            model = models.GPClassifier(Xin, y, likelihood=likelihood, mean=mean, **common)
        elif kind == "PoissonGP":
            model = models.PoissonGP(Xin, y, exposure=likelihood.exposure, mean=mean, **common)
        elif kind == "LatentGP":
            model = models.LatentGP(Xin, y, likelihood=likelihood, sample_offset=settings["sample_offset"], **common)
        elif kind in ("SparseGP", "SparseGPClassifier"):
            fit = SVGPFit(SVGPParams(fits["svgp_m"], fits["svgp_R"], fits["svgp_Z"], fits["svgp_psi"]),
                          settings["svgp_elbo"], settings["svgp_success"], settings["svgp_n_iter"],
                          settings["svgp_message"])
            extra = {"n_quad": settings["n_quad"], "jitter": settings["jitter"], "svgp_fit": fit}
            if kind == "SparseGP":
                model = models.SparseGP(Xin, y, likelihood=likelihood, **extra, **common)
            else:
                eps = {"epsilon": likelihood.epsilon} if hasattr(likelihood, "epsilon") else {}
                model = models.SparseGPClassifier(Xin, y, **eps, **extra, **common)
        elif kind == "GPLVMRegressor":
            fit = MLResult(fits["ml_psi"], VariationalParams(fits["ml_whitened_mean"], fits["ml_log_lambda"],
                                                             fits["ml_inducing"]),
                           settings["ml_bound"], fits["ml_all_bounds"], settings["ml_n_restarts"])
            model = models.GPLVMRegressor(Xin, y, latent_dim=settings["latent_dim"],
                                          n_inducing=settings["n_inducing"], prior=prior, standardize=False,
                                          ml_fit=fit)
        else:
            raise ValueError(f"{what}: the result's model {kind!r} is not one gpbayes rebuilds; pass the model")
    # what the sampled model had: its standardisation, the original y, the class labels
    model.standardize = bool(spec["standardize"])
    model.units = str(spec.get("units", "standardized"))  # a result saved before units: standardised
    model.x_shift, model.x_scale = _decode(spec["x_shift"]), _decode(spec["x_scale"])
    model.X_raw = model.X * model.x_scale + model.x_shift
    if kind == "GPRegressor":
        model.y_shift, model.y_scale, model.y_raw = float(spec["y_shift"]), float(spec["y_scale"]), y
        if model.noise is not None:
            model.noise = _decode(settings["noise"])
    elif kind == "GPLVMRegressor":
        model.y_shift, model.y_scale = _decode(spec["y_shift"]), _decode(spec["y_scale"])
    if spec.get("classes") is not None:
        model.classes = _decode(spec["classes"])
    if list(model.hyperparameter_labels) != list(spec["hyperparameters"]):
        raise ValueError(f"{what}: the rebuilt {kind} has the hyperparameters {model.hyperparameter_labels}, the "
                         f"result {spec['hyperparameters']}; pass the model")
    return model


#: the parts of the spec a model given with a result must match, and how a difference is named
_COMPARED = (("model", "model class"), ("hyperparameters", "hyperparameters"), ("n", "n (training rows)"),
             ("d", "input columns"), ("feature_names", "column names"), ("kernel", "kernel"),
             ("likelihood", "likelihood"), ("mean", "mean function"), ("settings", "settings"),
             ("standardize", "standardize"), ("x_shift", "standardisation of X (x_shift)"),
             ("x_scale", "standardisation of X (x_scale)"), ("y_shift", "standardisation of y (y_shift)"),
             ("y_scale", "standardisation of y (y_scale)"), ("data_sha256", "training data (hash of X, y)"),
             ("fit_sha256", "the fit the chains started from (hash of the SVGP / type-II ML fit)"))


def _short(value) -> str:
    text = json.dumps(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _differences(a, b, path: str = "") -> list[tuple[str, object, object]]:
    """Where two JSON values differ: (path, a's value, b's value) at the deepest level where both are
    dicts with the same keys' kind (a component's class, then its arguments one by one)."""
    if isinstance(a, dict) and isinstance(b, dict) and a.get("class") == b.get("class"):
        out = []
        for key in list(a) + [k for k in b if k not in a]:
            if a.get(key) != b.get(key):
                out += _differences(a.get(key), b.get(key), f"{path}.{key}" if path else str(key))
        return out
    if isinstance(a, dict) and isinstance(b, dict) and "class" in a and "class" in b:
        return [(f"{path}.class" if path else "class", a["class"], b["class"])]
    return [(path, a, b)]


def check_model(model, idata, what: str) -> None:
    """A model given with a result that carries one must be the model it was sampled from: a ValueError
    names every difference (class, hyperparameters, n, kernel, likelihood, mean, settings, standardisation,
    training data, fit).  A result without a spec is read as before (``io.check_names``)."""
    stored = _spec(idata)
    if stored is None:
        return
    now = json.loads(json.dumps(describe(model), allow_nan=True))  # as it reads back: tuples, floats alike
    for key in ("svgp_elbo", "svgp_success", "svgp_n_iter", "svgp_message", "ml_bound", "ml_n_restarts"):
        for s in (now, stored):
            s.get("settings", {}).pop(key, None)  # reports of the fit, not the model: the fit's hash compares it
    diffs = []
    for key, label in _COMPARED:
        if stored.get(key) != now.get(key):
            where = _differences(stored.get(key), now.get(key))
            diffs += [f"{label}{' ' + p if p else ''}: the result's {_short(a)}, the model's {_short(b)}"
                      for p, a, b in where[:3]]
    if diffs:
        raise ValueError(f"{what}: the model is not the one the result was sampled from -- " + "; ".join(diffs)
                         + f". Pass the model it was sampled from, or none: {what}(idata, ...) rebuilds it from "
                           "the result")


def is_result(obj) -> bool:
    """Whether ``obj`` is a result container (``arviz.InferenceData`` on ArviZ 0.x, ``xarray.DataTree`` on 1.x)."""
    from . import io

    if io._is_tree(obj):
        return True
    return type(obj).__name__ == "InferenceData" and callable(getattr(obj, "groups", None))


def resolve(model, idata, X_new, what: str, *, needs_x: bool = True):
    """``(model, idata, X_new)`` of ``gb.predict(model, idata, X_new)`` or ``gb.predict(idata, X_new)`` (the
    result first: the model is :func:`rebuild` from it); a model given is checked (:func:`check_model`).
    ``needs_x``: X_new must be given (``gb.predict``)."""
    from .models import _Model

    if is_result(model):  # gb.predict(idata, X_new) or gb.predict(idata, X_new=...)
        if idata is not None and X_new is not None:
            raise TypeError(f"{what}(idata, X_new): got a third argument; give either {what}(model, idata, X_new) "
                            f"or {what}(idata, X_new)")
        model, idata, X_new = None, model, (idata if X_new is None else X_new)
    if not is_result(idata):
        raise TypeError(f"{what}: idata must be a gb.sample result (arviz.InferenceData or xarray.DataTree), got "
                        f"{type(idata).__name__}; call {what}(idata, X_new) or {what}(model, idata, X_new)")
    if needs_x and X_new is None:
        raise TypeError(f"{what}: X_new, the inputs to predict at, is missing")
    if model is None:
        model = rebuild(idata, what)
    elif not isinstance(model, _Model):
        raise TypeError(f"{what}: model must be a gpbayes model (gb.GPRegressor, ...) or left out, got "
                        f"{type(model).__name__}")
    else:
        check_model(model, idata, what)
    return model, idata, X_new
