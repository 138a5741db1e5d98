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
import datetime as _dt
import json
import os
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
]

GROUP_ORDER = ("posterior", "sample_stats", "observed_data", "constant_data")


@contextlib.contextmanager
def atomic_path(path, suffix: str = ".tmp"):
    """Yield a temporary path next to ``path``; rename it over ``path`` on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


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


def write_inference_data(groups: Mapping[str, xr.Dataset], path) -> Path:
    """Write ArviZ-layout groups into one NetCDF4 file, atomically."""
    if "posterior" not in groups:
        raise ValueError("an inference-data file needs a 'posterior' group")
    ordered = [g for g in GROUP_ORDER if g in groups] + [g for g in groups if g not in GROUP_ORDER]
    with atomic_path(path) as tmp:
        for i, name in enumerate(ordered):
            groups[name].to_netcdf(tmp, group=name, mode="w" if i == 0 else "a", engine="netcdf4")
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
