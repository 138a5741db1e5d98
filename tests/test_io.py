import json
import os
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from gpbayes_repro import io


def groups():
    rng = np.random.default_rng(0)
    return io.make_inference_groups(
        {"tau": rng.normal(size=(2, 10)), "theta": rng.normal(size=(2, 10, 3))},
        {"lp": rng.normal(size=(2, 10)), "accepted": rng.uniform(size=(2, 10)) < 0.3,
         "n_cubic": np.ones((2, 10), dtype=np.int64)},
        extra_dims={"theta": ("param",)},
        coords={"param": np.array(["a", "b", "c"])},
        attrs=io.provenance({"scale": "smoke", "nested": {"x": 1}}, seed=3),
    )


def test_round_trip_keeps_dims_and_attrs(tmp_path):
    path = tmp_path / "run.nc"
    g = groups()
    io.write_inference_data(g, path)
    back = io.read_inference_data(path)
    assert set(back) == {"posterior", "sample_stats"}
    post = back["posterior"]
    assert post["theta"].dims == ("chain", "draw", "param")
    assert list(post["param"].values) == ["a", "b", "c"]
    np.testing.assert_array_equal(post["theta"].values, g["posterior"]["theta"].values)
    assert json.loads(post.attrs["config"]) == {"nested": {"x": 1}, "scale": "smoke"}
    assert post.attrs["seed"] == 3 and "git_commit" in post.attrs and "gpbayes_version" in post.attrs
    # plain xarray can read each group
    with xr.open_dataset(path, group="sample_stats") as ss:
        assert ss["lp"].dims == ("chain", "draw")
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def test_interrupted_write_leaves_no_file(tmp_path):
    path = tmp_path / "run.nc"

    class Boom(Exception):
        pass

    with pytest.raises(Boom):
        with io.atomic_path(path) as tmp:
            tmp.write_text("half a file")
            raise Boom()
    assert os.listdir(tmp_path) == []


def test_concat_chains(tmp_path):
    g = groups()
    parts = [{k: v.isel(chain=[i]) for k, v in g.items()} for i in range(2)]
    merged = io.concat_chains(parts)
    assert merged["posterior"].sizes["chain"] == 2
    np.testing.assert_array_equal(merged["posterior"]["tau"].values, g["posterior"]["tau"].values)


def test_missing_group_and_file_errors(tmp_path):
    path = tmp_path / "run.nc"
    io.write_inference_data(groups(), path)
    with pytest.raises(KeyError, match="no group"):
        io.read_inference_data(path, ["observed_data"])
    with pytest.raises(FileNotFoundError, match="does not exist"):
        io.read_inference_data(tmp_path / "nope.nc")


def test_written_files_honour_the_umask(tmp_path):
    """Results get 0666 & ~umask like any file the user writes (mkstemp alone gives 0600)."""
    import os
    import stat

    import xarray as xr

    from gpbayes_repro import io as gio

    old = os.umask(0o022)
    try:
        p = gio.write_netcdf_atomic(xr.Dataset({"a": ("x", [1.0])}), tmp_path / "a.nc")
        assert stat.S_IMODE(os.stat(p).st_mode) == 0o644
        os.umask(0o077)
        q = gio.write_netcdf_atomic(xr.Dataset({"a": ("x", [1.0])}), tmp_path / "b.nc")
        assert stat.S_IMODE(os.stat(q).st_mode) == 0o600
    finally:
        os.umask(old)


def test_stale_temporaries_of_a_killed_writer_are_removed(tmp_path):
    target = tmp_path / "r.nc"
    stale = tmp_path / ".r.nc.abc123.tmp"
    stale.write_text("half a file")
    other = tmp_path / ".other.nc.abc123.tmp"  # another target's temporary stays
    other.write_text("x")
    io.write_netcdf_atomic(xr.Dataset({"a": ("x", [1.0])}), target)
    assert target.exists() and not stale.exists() and other.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".other.nc.abc123.tmp", "r.nc"]


def test_stale_cleanup_spares_the_temporary_of_a_target_whose_name_extends_this_one(tmp_path):
    """'r.nc.bak.nc' is another target, perhaps being written right now: its temporary stays."""
    import tempfile

    stale = Path(tempfile.mkstemp(dir=tmp_path, prefix=".r.nc.", suffix=".tmp")[1])  # as a killed writer left it
    busy = Path(tempfile.mkstemp(dir=tmp_path, prefix=".r.nc.bak.nc.", suffix=".tmp")[1])
    io.write_netcdf_atomic(xr.Dataset({"a": ("x", [1.0])}), tmp_path / "r.nc")
    assert not stale.exists() and busy.exists()


def test_the_file_size_limit_is_reported_as_file_too_large(tmp_path):
    """A real ``ulimit -f``: netCDF4 says only 'HDF error'; the message names the limit and the file."""
    import subprocess
    import sys

    script = (
        "import resource, numpy as np, xarray as xr\n"
        "from gpbayes_repro import io\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))\n"
        "io.write_netcdf_atomic(xr.Dataset({'a': ('x', np.arange(1e5))}), 'big.nc')\n"
    )
    res = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode != 0
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("OSError: [Errno 27] no space left on device / file too large while writing big.nc"), last
    assert "file-size limit (ulimit -f) of 100000 bytes" in last
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # neither target nor temporary


def test_a_full_disk_is_reported_plainly_with_the_path(tmp_path, monkeypatch):
    import errno
    import shutil
    from collections import namedtuple

    Usage = namedtuple("Usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda p: Usage(10, 10, 1024))

    def full(*args, **kwargs):
        raise RuntimeError("NetCDF: HDF error")

    monkeypatch.setattr(xr.Dataset, "to_netcdf", full)
    with pytest.raises(OSError, match=r"no space left on device / file too large while writing .*r\.nc") as ei:
        io.write_netcdf_atomic(xr.Dataset({"a": ("x", [1.0])}), tmp_path / "r.nc")
    assert ei.value.errno == errno.ENOSPC
    assert not list(tmp_path.glob(".r.nc.*"))  # no temporary left behind
    # an HDF error with plenty of space keeps its kind but names the file
    monkeypatch.setattr(shutil, "disk_usage", lambda p: Usage(10, 10, 10 * 2**30))
    with pytest.raises(RuntimeError, match=r"HDF error while writing .*r\.nc"):
        io.write_netcdf_atomic(xr.Dataset({"a": ("x", [1.0])}), tmp_path / "r.nc")

    def too_big(*args, **kwargs):
        raise OSError(errno.EFBIG, "File too large")

    monkeypatch.setattr(xr.Dataset, "to_netcdf", too_big)
    with pytest.raises(OSError, match="file too large while writing"):
        io.write_netcdf_atomic(xr.Dataset({"a": ("x", [1.0])}), tmp_path / "r.nc")
