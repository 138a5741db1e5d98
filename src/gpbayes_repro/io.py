"""The reproduction's result files: atomic NetCDF writes, provenance, the inference-data file layout.

Moved here from the library (issue 23: workflow plumbing is the
reproduction's): every write goes to a temporary file in the target
directory and is then renamed over the target (``os.replace`` is atomic on
POSIX), so an interrupted run never leaves a file that looks finished;
provenance (config, seed, gpbayes version, git commit, creation time) goes
into the attributes.  The library's group layout (``make_inference_groups``,
``to_inference_groups``, ``concat_chains``, ``arviz_attrs``) is re-exported,
so ``from gpbayes_repro import io`` is the one import of the scripts.  The
files open with plain ``xarray.open_dataset(path, group="posterior")`` and
with ``arviz.from_netcdf``.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import glob
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

from gpbayes.io import arviz_attrs, concat_chains, make_inference_groups, to_inference_groups

__all__ = [
    "atomic_path",
    "write_netcdf_atomic",
    "write_inference_data",
    "read_inference_data",
    "provenance",
    "make_inference_groups",
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
    from gpbayes import __version__

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
