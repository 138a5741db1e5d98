"""Issue 26 section 8: loose ends of the workflow found on the way.

* a damaged intermediate NetCDF fails its consumer every time, saying it is damaged and how to recompute it;
* ``tools/compare_results.py`` leaves out the AMIS reference runs' repeated timings (``timing_share``,
  ``timing_target_cpu``), which made a ``--cores 1`` vs ``--cores 2`` comparison exit 1;
* a config number written ``1e-6`` (a string under YAML 1.1) is read as a number and said so.
"""

import importlib.util
import logging
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import xarray as xr

from gpbayes_repro import workflow

REPO = Path(__file__).resolve().parents[1]


def _smk(tmp_path, inputs):
    return SimpleNamespace(input=[str(p) for p in inputs], output=[], log=[str(tmp_path / "job.log")], rule="consumer")


def test_a_truncated_netcdf_input_fails_with_a_message_and_is_recomputed_next_time(tmp_path):
    good = tmp_path / "chain_0.nc"
    xr.Dataset({"psi": (("draw", "param"), np.random.default_rng(0).normal(size=(2000, 5)))}).to_netcdf(good)
    data = good.read_bytes()
    bad = tmp_path / "chain_1.nc"
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(workflow.DamagedInputError) as info:
        with workflow.job(_smk(tmp_path, [good, bad])):
            xr.load_dataset(good)
            xr.load_dataset(bad)
    msg = str(info.value)
    assert "damaged" in msg and str(bad) in msg and "run the same snakemake command again" in msg
    assert f"{good} (" not in msg  # the intact input is not blamed
    # moved aside: the next run finds the output missing and recomputes it (not "Nothing to be done")
    assert not bad.exists() and (tmp_path / "chain_1.nc.damaged").exists() and good.exists()
    assert "damaged" in (tmp_path / "job.log").read_text()
    logging.getLogger("gpbayes").handlers.clear()


def test_an_error_with_intact_inputs_is_raised_unchanged(tmp_path):
    good = tmp_path / "chain_0.nc"
    xr.Dataset({"x": ("i", np.arange(3.0))}).to_netcdf(good)
    with pytest.raises(ValueError, match="the job's own error"):
        with workflow.job(_smk(tmp_path, [good])):
            raise ValueError("the job's own error")
    assert good.exists()


def _run(root: Path, share: float, value: float):
    d = root / "results" / "amis" / "reference"
    d.mkdir(parents=True)
    xr.Dataset({"theta_mean": ("param", np.array([1.0, value])),
                "timing_share": ("repeat", np.array([0.05, share])),
                "timing_target_cpu": ("repeat", np.array([1.0, 2.0 * share]))}).to_netcdf(d / "housing_rbf.nc")


def _compare(a, b):
    return subprocess.run([sys.executable, str(REPO / "tools" / "compare_results.py"), str(a), str(b)],
                          capture_output=True, text=True)


def test_compare_results_leaves_out_the_amis_timings_but_not_the_numbers(tmp_path):
    _run(tmp_path / "a", 0.06, 2.0)
    _run(tmp_path / "b", 0.07, 2.0)  # only the clock differs
    _run(tmp_path / "c", 0.06, 2.5)  # a number differs
    same = _compare(tmp_path / "a", tmp_path / "b")
    assert same.returncode == 0, same.stdout + same.stderr
    diff = _compare(tmp_path / "a", tmp_path / "c")
    assert diff.returncode == 1 and "theta_mean" in diff.stdout


def test_a_yaml_1_1_float_string_is_read_as_a_number_and_said():
    from gpbayes_repro import config as gconfig
    import yaml

    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    cfg["sparse_mcmc"]["claims"]["equivalence_tol"] = "1e-6"  # what YAML 1.1 makes of 1e-6
    assert gconfig.coerce_command_line_strings(cfg) == ["sparse_mcmc/claims/equivalence_tol"]
    assert cfg["sparse_mcmc"]["claims"]["equivalence_tol"] == 1e-6
    text = (REPO / "workflow" / "Snakefile").read_text()
    assert "_read_as_typed = coerce_command_line_strings(config)" in text and "file=sys.stderr" in text
