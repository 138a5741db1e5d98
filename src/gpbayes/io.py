"""NetCDF conventions: atomic writes and the ArviZ group layout.

A sampler run is stored as one NetCDF4 file with groups

* ``posterior``    — sampled quantities, dims ``(chain, draw, ...)``;
* ``sample_stats`` — per-draw statistics, dims ``(chain, draw)``: standard
  names where ArviZ has them (``lp``, ``acceptance_rate``) and gpbayes'
  own (``accepted``, ``n_cubic`` O(n^3) operations, ``n_likelihood``
  likelihood evaluations, ``wall_time`` seconds);
* optional further groups (``observed_data``, ``constant_data``, ...).

Provenance goes into the root attributes of every group: the full run
config (JSON), seed, gpbayes version, git commit, creation time.  The files
open with plain ``xarray.open_dataset(path, group="posterior")`` and with
``arviz.from_netcdf``.

Every write goes to a temporary file in the target directory and is then
renamed over the target (``os.replace`` is atomic on POSIX), so an
interrupted run never leaves a file that looks finished.
"""

from __future__ import annotations

import contextlib
import errno
import glob
import datetime as _dt
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import xarray as xr

__all__ = [
    "atomic_path",
    "write_netcdf_atomic",
    "write_inference_data",
    "read_inference_data",
    "make_inference_groups",
    "provenance",
    "concat_chains",
    "to_inference_groups",
    "arviz_attrs",
]

GROUP_ORDER = ("posterior", "sample_stats", "observed_data", "constant_data")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path, suffix: str = ".tmp"):
    """Yield a temporary path next to ``path``; rename it over ``path`` on success.

    The finished file gets the mode a plain ``open(path, "w")`` would give
    (0666 less the process umask), not ``mkstemp``'s private 0600, so results
    on a shared project directory are readable by the group as usual.
    Temporaries of the same target left by a killed writer are removed first.
    A full disk or the file-size limit raises ``OSError`` "no space left on
    device / file too large while writing <path>" (netCDF4 says only "HDF
    error"); the temporary is removed on any failure.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # a writer killed mid-write (kill -9, node failure) leaves its hidden temporary behind: remove
    # those of this target first (one writer per target, as the workflow guarantees)
    for stale in _stale_temporaries(path, suffix):
        with contextlib.suppress(FileNotFoundError):
            stale.unlink()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix)
    os.close(fd)
    try:
        try:
            yield Path(tmp)
        except (OSError, RuntimeError) as err:
            clearer = _write_error(err, path, Path(tmp))
            if clearer is err:
                raise
            raise clearer from err
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _stale_temporaries(path: Path, suffix: str):
    """The temporaries ``mkstemp`` made for ``path`` alone: ``.<name>.<random part><suffix>``.

    The random part (letters, digits, ``_``) holds no dot, so the temporary of another
    target whose name merely starts with this one's (``r.nc`` and ``r.nc.bak.nc``) is left alone.
    """
    own = re.compile(rf"\.{re.escape(path.name)}\.[a-z0-9_]+{re.escape(suffix)}")
    return [p for p in path.parent.glob(f".{glob.escape(path.name)}.*{glob.escape(suffix)}")
            if own.fullmatch(p.name)]


_FULL = {errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", errno.ENOSPC)}


def _file_size_limit() -> int | None:
    """The process's file-size limit (``ulimit -f``) in bytes, or None when there is none."""
    try:
        import resource
    except ImportError:  # not on POSIX
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def _write_error(err: BaseException, path: Path, tmp: Path | None = None) -> BaseException:
    """A full disk or a file-size limit said plainly, with the path; other errors unchanged.

    netCDF4 reports a write that ran out of space, or that hit the file-size
    limit, as ``RuntimeError: NetCDF: HDF error``; the first is recognised by the
    free space left on the target's file system, the second by the temporary
    having reached the limit (the kernel lets a file grow exactly to it).
    """
    free = shutil.disk_usage(path.parent).free
    hdf = isinstance(err, RuntimeError) and "HDF error" in str(err)
    limit = _file_size_limit()
    size = tmp.stat().st_size if tmp is not None and tmp.exists() else 0
    if (hdf or isinstance(err, OSError)) and limit is not None and size >= limit:
        return OSError(errno.EFBIG, f"no space left on device / file too large while writing {path}: the "
                                    f"file reached the process's file-size limit (ulimit -f) of {limit} bytes "
                                    f"({err})")
    if (isinstance(err, OSError) and err.errno in _FULL) or (hdf and free < 16 * 2**20):
        return OSError(errno.ENOSPC, f"no space left on device / file too large while writing {path} "
                                     f"({free / 2**20:.1f} MiB free on its file system; {err})")
    if hdf:
        return RuntimeError(f"{err} while writing {path}")
    return err


def write_netcdf_atomic(ds: xr.Dataset, path) -> Path:
    """Write one dataset (root group) atomically."""
    with atomic_path(path) as tmp:
        ds.to_netcdf(tmp, engine="netcdf4", mode="w")
    return Path(path)


def _git_commit() -> str:
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True,
                             text=True, timeout=5, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def provenance(config: Mapping | None = None, seed: int | None = None, **extra) -> dict:
    """Root attributes for a result file (NetCDF attrs: str/number only)."""
    from . import __version__

    attrs = {
        "gpbayes_version": __version__,
        "git_commit": os.environ.get("GPBAYES_GIT_COMMIT") or _git_commit(),
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "config": json.dumps(config if config is not None else {}, sort_keys=True, default=str),
    }
    if seed is not None:
        attrs["seed"] = int(seed)
    for k, v in extra.items():
        if isinstance(v, (bool, np.bool_)):
            v = int(v)
        elif isinstance(v, (dict, list, tuple)):
            v = json.dumps(v, default=str)
        attrs[k] = v
    return attrs


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


def write_inference_data(groups: Mapping[str, xr.Dataset], path, *, root: xr.Dataset | None = None) -> Path:
    """Write ArviZ-layout groups into one NetCDF4 file, atomically.

    ``root`` (optional) is written to the file's root group, where plain
    ``xarray.load_dataset(path)`` reads it; ArviZ reads only the named
    groups.  Without ``root`` the file needs a ``posterior`` group.
    """
    if root is None and "posterior" not in groups:
        raise ValueError("an inference-data file needs a 'posterior' group")
    ordered = [g for g in GROUP_ORDER if g in groups] + [g for g in groups if g not in GROUP_ORDER]
    with atomic_path(path) as tmp:
        mode = "w"
        if root is not None:
            root.to_netcdf(tmp, mode="w", engine="netcdf4")
            mode = "a"
        for name in ordered:
            groups[name].to_netcdf(tmp, group=name, mode=mode, engine="netcdf4")
            mode = "a"
    return Path(path)


def read_inference_data(path, groups=None) -> dict[str, xr.Dataset]:
    """Read the groups of an inference-data file into memory."""
    import netCDF4

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"result file {path} does not exist")
    with netCDF4.Dataset(path) as nc:
        available = list(nc.groups)
    wanted = available if groups is None else list(groups)
    missing = [g for g in wanted if g not in available]
    if missing:
        raise KeyError(f"{path} has no group(s) {missing}; it has {available}")
    out = {}
    for g in wanted:
        with xr.open_dataset(path, group=g, engine="netcdf4") as ds:
            out[g] = ds.load()
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
