"""The ArviZ group layout of sampler results.

A sampler run is a set of ``xarray.Dataset`` groups (an ``arviz.InferenceData`` on ArviZ 0.x, an
``xarray.DataTree`` on ArviZ 1.x):

* ``posterior``    — sampled quantities, dims ``(chain, draw, ...)``;
* ``sample_stats`` — per-draw statistics, dims ``(chain, draw)``: standard
  names where ArviZ has them (``lp``, ``acceptance_rate``, ``step_size``) and gpbayes'
  own (``accepted``, ``n_cubic`` O(n^3) operations, ``n_likelihood``
  likelihood evaluations, ``wall_time`` seconds);
* further groups of the ArviZ schema (``unconstrained_posterior``,
  ``observed_data``, ``constant_data``, ...).

:func:`make_idata` holds them in the container of the installed ArviZ -- the one place that
asks which: ``arviz.InferenceData`` on ArviZ 0.x, ``xarray.DataTree`` on ArviZ 1.x (which
replaced InferenceData by it), with the same groups, variables, dims and attributes;
:func:`group`, :func:`group_names`, :func:`has_group`, :func:`set_group` and
:func:`result_attrs` read and extend either.  ``idata.to_netcdf`` / ``arviz.from_netcdf``
store and read them on both.  (Atomic writes, provenance and the reproduction's own file
conventions are ``gpbayes_repro.io``.)
"""

from __future__ import annotations

import datetime as _dt
import warnings
from collections.abc import Mapping

import numpy as np
import xarray as xr

__all__ = [
    "arviz_uses_datatree",
    "make_idata",
    "group",
    "group_names",
    "has_group",
    "set_group",
    "result_attrs",
    "make_inference_groups",
    "concat_chains",
    "to_inference_groups",
    "arviz_attrs",
    "psi_draws",
    "stack_hyperparameters",
    "check_names",
]


def arviz_uses_datatree() -> bool:
    """Whether the installed ArviZ holds results in ``xarray.DataTree`` (ArviZ >= 1.0) rather than
    ``arviz.InferenceData`` (0.x)."""
    import arviz as az

    return int(str(az.__version__).split(".", 1)[0]) >= 1


def make_idata(groups: Mapping[str, xr.Dataset], attrs: Mapping | None = None):
    """The result container of the installed ArviZ from its groups (name -> ``xarray.Dataset``) and
    top-level attributes: an ``xarray.DataTree`` with one child node per group on ArviZ 1.x, an
    ``arviz.InferenceData`` on 0.x.  Both give ``idata.posterior["x"]``, ``idata.attrs``,
    ``idata.to_netcdf(path)`` and ``arviz.summary(idata)``; the other helpers of this module
    read either."""
    attrs = dict(attrs or {})
    if arviz_uses_datatree():
        tree = xr.DataTree.from_dict({f"/{name}": ds for name, ds in groups.items()})
        tree.attrs.update(attrs)
        return tree
    import arviz as az

    return az.InferenceData(attrs=attrs, **groups)


def _is_tree(idata) -> bool:
    tree = getattr(xr, "DataTree", None)
    return tree is not None and isinstance(idata, tree)


def group_names(idata) -> list[str]:
    """The groups of a result (``posterior``, ``sample_stats``, ...), in order, of either container."""
    if _is_tree(idata):
        return [str(name) for name in idata.children]
    return list(idata.groups())


def has_group(idata, name: str) -> bool:
    """Whether a result (either container) has the group ``name``."""
    return name in group_names(idata)


def group(idata, name: str) -> xr.Dataset:
    """The group ``name`` of a result as an ``xarray.Dataset`` (a DataTree node's variables and
    attributes; InferenceData's group as it is); KeyError when there is none."""
    if not has_group(idata, name):
        raise KeyError(f"the result has no group {name!r}; its groups: {group_names(idata)}")
    if _is_tree(idata):
        return idata[name].to_dataset()
    return getattr(idata, name)


def set_group(idata, name: str, ds: xr.Dataset) -> None:
    """Add the group ``name`` to ``idata`` in place, replacing one of that name."""
    if _is_tree(idata):
        if name in idata.children:
            del idata[name]
        idata[name] = xr.DataTree(ds)
        return
    if name in idata.groups():
        del idata[name]
    idata.add_groups({name: ds})


def result_attrs(idata) -> dict:
    """The top-level attributes of a result (``seed``, ...), of either container."""
    return dict(idata.attrs)


def make_inference_groups(
    posterior: Mapping[str, np.ndarray],
    sample_stats: Mapping[str, np.ndarray] | None = None,
    *,
    extra_dims: Mapping[str, tuple[str, ...]] | None = None,
    coords: Mapping[str, np.ndarray] | None = None,
    attrs: Mapping | None = None,
) -> dict[str, xr.Dataset]:
    """Build ``{'posterior': ds, 'sample_stats': ds}`` from (chain, draw, ...) arrays."""
    extra_dims = dict(extra_dims or {})
    attrs = dict(attrs or {})

    def build(values: Mapping[str, np.ndarray]) -> xr.Dataset:
        data_vars = {}
        for name, arr in values.items():
            arr = np.asarray(arr)
            if arr.ndim < 2:
                raise ValueError(f"{name}: expected (chain, draw, ...) array, got shape {arr.shape}")
            dims = ("chain", "draw") + tuple(extra_dims.get(name, ()))
            if len(dims) != arr.ndim:
                dims = dims + tuple(f"{name}_dim_{i}" for i in range(arr.ndim - len(dims)))
            data_vars[name] = (dims, arr)
        ds = xr.Dataset(data_vars)
        n_chain = ds.sizes.get("chain", 0)
        n_draw = ds.sizes.get("draw", 0)
        ds = ds.assign_coords(chain=np.arange(n_chain), draw=np.arange(n_draw))
        for c, v in (coords or {}).items():
            if c in ds.dims:
                ds = ds.assign_coords({c: v})
        ds.attrs.update(attrs)
        return ds

    groups = {"posterior": build(posterior)}
    if sample_stats:
        groups["sample_stats"] = build(sample_stats)
    return groups


def arviz_attrs() -> dict:
    """Group attributes of the ArviZ schema: ``created_at``, ``inference_library(_version)``."""
    from . import __version__

    return {
        "created_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "inference_library": "gpbayes",
        "inference_library_version": __version__,
    }


def _scalar_attrs(d: Mapping, prefix: str) -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, (bool, np.bool_)):
            out[prefix + k] = int(v)
        elif isinstance(v, (int, float, str, np.integer, np.floating)):
            out[prefix + k] = v.item() if hasattr(v, "item") else v
    return out


def to_inference_groups(
    chains,
    *,
    var_name: str = "psi",
    var_names: list[str] | None = None,
    dims: tuple[str, ...] = ("param",),
    coords: Mapping[str, np.ndarray] | None = None,
    observed_data: Mapping[str, np.ndarray] | None = None,
    stats: list[str] | None = None,
    extra_dims: Mapping[str, tuple[str, ...]] | None = None,
    attrs: Mapping | None = None,
    per_chain_tuning: bool = False,
) -> dict[str, xr.Dataset]:
    """ArviZ groups from ``gpbayes.mcmc.runner.Chain`` results (one per chain, equal lengths).

    ``posterior``: the draws as one variable ``var_name`` with dims
    ``(chain, draw, *dims)`` or, with ``var_names``, one variable per
    column; plus every ``Chain.extra`` array (per-draw latent draws etc.).
    ``sample_stats``: every per-draw statistic (``lp``, ``acceptance_rate``,
    ``diverging``, ``n_steps``, ``tree_depth``, ``n_cubic``,
    ``n_likelihood``, ``wall_time``, ...; ``stats`` picks a subset).  The
    warm-up cost and the scalar tuned parameters go into the
    ``sample_stats`` attributes as ``warmup_*`` and ``tuned_*`` (first
    chain's) and, per chain, as ``warmup_n_cubic``/``warmup_wall_time``
    variables over ``chain``.  Group attributes follow the ArviZ schema
    (:func:`arviz_attrs`) plus ``attrs``; the stop reason is ``stopped``.

    ``per_chain_tuning`` (the layout of ``gpbayes.sample``): every chain's
    tuning goes into ``sample_stats`` variables instead of the first chain's
    attributes: the tuned step size as ``step_size`` over ``(chain, draw)``
    (the frozen value each kept draw was made with, ArviZ's name), the other
    scalar tuned parameters as ``tuned_<name>`` and the scalar warm-up
    summaries as ``warmup_<name>``, both over ``chain``.
    """
    chains = list(chains)
    if not chains:
        raise ValueError("no chains")
    lengths = {c.n_draws for c in chains}
    if len(lengths) != 1:
        raise ValueError(f"chains of different lengths {sorted(lengths)}: trim them first")
    draws = np.stack([c.draws for c in chains])
    if var_names is not None:
        if len(var_names) != draws.shape[2]:
            raise ValueError(f"{len(var_names)} names for {draws.shape[2]} columns")
        post = {n: draws[:, :, j] for j, n in enumerate(var_names)}
        post_dims = {}
    else:
        post = {var_name: draws}
        post_dims = {var_name: tuple(dims)}
    for k in chains[0].extra:
        post[k] = np.stack([c.extra[k] for c in chains])
    names = stats if stats is not None else [k for k in chains[0].stats if all(k in c.stats for c in chains)]
    sample_stats = {k: np.stack([np.asarray(c.stats[k]) for c in chains]) for k in names}
    groups = make_inference_groups(post, sample_stats, extra_dims={**post_dims, **dict(extra_dims or {})},
                                   coords=coords, attrs={**arviz_attrs(), **dict(attrs or {})})
    ss = groups["sample_stats"]
    ss = ss.assign(warmup_n_cubic=("chain", np.array([c.warmup.get("n_cubic", 0) for c in chains])),
                   warmup_wall_time=("chain", np.array([c.warmup.get("wall_time", np.nan) for c in chains])))
    if per_chain_tuning:
        ss = ss.assign(_tuning_variables(chains, n_draws=draws.shape[1], have=set(ss.data_vars)))
    else:
        ss.attrs.update(_scalar_attrs(chains[0].warmup, "warmup_"))
        ss.attrs.update(_scalar_attrs(chains[0].params, "tuned_"))
    ss.attrs["stopped"] = chains[0].stopped
    groups["sample_stats"] = ss
    if observed_data:
        od = xr.Dataset({k: (tuple(f"{k}_dim_{i}" for i in range(np.ndim(v))), np.asarray(v))
                         for k, v in observed_data.items()})
        od.attrs.update(arviz_attrs())
        groups["observed_data"] = od
    return groups


def _tuning_variables(chains, *, n_draws: int, have: set) -> dict:
    """Each chain's scalar tuned parameters and warm-up summaries as ``sample_stats`` variables."""
    def scalars(d):
        return {k: v for k, v in _scalar_attrs(d, "").items() if not isinstance(v, str)}

    out = {}
    tuned = [scalars(c.params) for c in chains]
    for k in sorted(set.intersection(*(set(t) for t in tuned))):
        values = np.array([t[k] for t in tuned])
        if k == "step_size" and k not in have:
            out[k] = (("chain", "draw"), np.repeat(values[:, None], n_draws, axis=1))
        else:
            out[f"tuned_{k}"] = ("chain", values)
    warm = [scalars(c.warmup) for c in chains]
    for k in sorted(set.intersection(*(set(w) for w in warm))):
        if f"warmup_{k}" not in have:
            out[f"warmup_{k}"] = ("chain", np.array([w[k] for w in warm]))
    return out


def concat_chains(parts: list[dict[str, xr.Dataset]]) -> dict[str, xr.Dataset]:
    """Concatenate single-chain results (each with chain size 1) along ``chain``."""
    if not parts:
        raise ValueError("no chains to concatenate")
    out = {}
    for g in parts[0]:
        dss = [p[g] for p in parts]
        if "chain" in dss[0].dims:
            merged = xr.concat(dss, dim="chain", combine_attrs="drop_conflicts")
            merged = merged.assign_coords(chain=np.arange(merged.sizes["chain"]))
        else:
            merged = dss[0]
        out[g] = merged
    return out


def stack_hyperparameters(ds: xr.Dataset) -> xr.DataArray:
    """One array ``(chain, draw, param)`` of a group holding the hyperparameters (``unconstrained_posterior``
    or ``posterior``): its variables in order, a variable over a dim (``lengthscale`` over ``feature``)
    giving one column per coordinate.  ``param`` labels the columns as ``arviz.summary`` labels its rows
    (``lengthscale[age]``, ``signal_variance``); the columns are psi's coordinates in order."""
    columns, labels = [], []
    for name, da in ds.data_vars.items():
        extra = [d for d in da.dims if d not in ("chain", "draw")]
        if len(extra) > 1:
            raise ValueError(f"hyperparameter {name!r} has dims {da.dims}: expected (chain, draw) and at most one more")
        if not extra:
            columns.append(da.transpose("chain", "draw").values[:, :, None])
            labels.append(str(name))
            continue
        (dim,) = extra
        columns.append(da.transpose("chain", "draw", dim).values)
        values = da[dim].values if dim in da.coords else range(da.sizes[dim])
        labels += [f"{name}[{c}]" for c in values]
    stacked = np.concatenate(columns, axis=2)
    coords = {d: ds[d].values if d in ds.coords else np.arange(ds.sizes[d]) for d in ("chain", "draw")}
    return xr.DataArray(stacked, dims=("chain", "draw", "param"), coords={**coords, "param": labels})


def psi_draws(idata) -> xr.DataArray:
    """The log-hyperparameters psi = log theta of a ``gpbayes.sample`` result as one array
    ``(chain, draw, param)`` (from ``unconstrained_posterior``, exactly as sampled; :func:`stack_hyperparameters`:
    ``param`` is ``lengthscale[0]``, ..., ``signal_variance``, ...).  A result of an earlier gpbayes (one
    variable per coordinate: ``tau_0``, ``sigma``) is read the same way."""
    return stack_hyperparameters(group(idata, "unconstrained_posterior"))


def check_names(model, idata, what: str) -> None:
    """An ``idata`` read with ``model`` (``predict``, ``sample_posterior_predictive``,
    ``compute_log_likelihood``): the hyperparameters are read in psi's order, so their number must be the
    model's; a result saved by an earlier gpbayes, with one variable per coordinate under the names of
    before (``tau_0``, ``sigma``), is read as it is, with a DeprecationWarning naming the current ones."""
    if not has_group(idata, "unconstrained_posterior"):
        raise ValueError(f"{what}: idata has no unconstrained_posterior group (psi = log theta, as gb.sample "
                         f"writes it); {type(model).__name__} reads its hyperparameters {model.hyperparameter_labels} "
                         "from there")
    labels = [str(p) for p in psi_draws(idata)["param"].values]
    if len(labels) != len(model.hyperparameter_labels):
        raise ValueError(f"{what}: idata holds {len(labels)} hyperparameters {labels}, {type(model).__name__} has "
                         f"{len(model.hyperparameter_labels)}: {model.hyperparameter_labels}; was it sampled from "
                         "another model?")
    legacy = model._legacy_names()
    if labels == legacy and labels != model.hyperparameter_labels:
        renamed = {o: n for o, n in zip(legacy, model.hyperparameter_labels) if o != n}
        warnings.warn(f"{what}: idata has the hyperparameter names of an earlier gpbayes ({list(renamed)}); read "
                      f"in psi's order as {list(renamed.values())}. gb.sample now writes the posterior as "
                      f"{model.hyperparameter_names} (issue 33); sample again or rename the variables to drop "
                      "this warning", DeprecationWarning, stacklevel=3)
