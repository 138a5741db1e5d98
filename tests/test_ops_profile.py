"""CPU per counted O(n^3) operation (gpbayes_repro.ops_profile) on a synthetic run directory with exact sums."""

from __future__ import annotations

import base64
import csv
import json
import math

import netCDF4
import numpy as np
import pytest

from gpbayes_repro import ops_profile


def _bench(run, rule, name, cpu):
    d = run / "benchmarks" / rule
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{name}.tsv").write_text("s\th:m:s\tmax_rss\tcpu_time\n"
                                   f"{cpu + 1:.4f}\t0:00:01\t100.0\t{cpu:.4f}\n")


def _meta(run, rel, rule, inputs=(), split_at=None, endtime=100.0):
    """Snakemake's record of one output: .snakemake/metadata/<urlsafe b64 of the path>."""
    b64 = base64.urlsafe_b64encode(rel.encode()).decode()
    meta = run / ".snakemake" / "metadata"
    path = meta / b64 if split_at is None else meta / ("@" + b64[:split_at]) / b64[split_at:]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"rule": rule, "input": list(inputs), "incomplete": False, "endtime": endtime}))


def _chain_file(path, n_cubic, warmup=None, attrs=None, extra=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    with netCDF4.Dataset(path, "w") as ds:
        for k, v in (attrs or {}).items():
            ds.setncattr(k, v)
        post = ds.createGroup("posterior")
        post.setncattr("kernel", "ard")
        ss = ds.createGroup("sample_stats")
        ss.createDimension("chain", n_cubic.shape[0])
        ss.createDimension("draw", n_cubic.shape[1])
        ss.createVariable("n_cubic", "i8", ("chain", "draw"))[:] = n_cubic
        for name, arr in (extra or {}).items():
            ss.createVariable(name, "i8", ("chain", "draw"))[:] = arr
        if warmup is not None:
            ss.createVariable("warmup_n_cubic", "i8", ("chain",))[:] = warmup


@pytest.fixture
def run(tmp_path):
    """Rule `chains` (2 jobs, 3 + 5 CPU-s): a chain file with n = 10 and warm-up, an AMIS-style cost file
    with n = 20; rule `capacity` (1 job, 4 CPU-s): F&G's per-classifier costs; rule `mh` (1 job, 6 CPU-s): a chain
    whose size is in its input; rule `regression_mh_merge` copies counts; rule `figure` counts nothing."""
    run = tmp_path / "run"
    _bench(run, "chains", "a_block0", 3.0)
    _bench(run, "chains", "b_block0", 5.0)
    _chain_file(run / "results/c/a_block0.nc", np.array([[1, 2, 3], [4, 5, 6]]), warmup=np.array([7, 8]),
                attrs={"n": 10}, extra={"n_cubic_theta": np.ones((2, 3), int)})  # a part of n_cubic: not added
    _meta(run, "results/c/a_block0.nc", "chains")
    with netCDF4.Dataset(run / "results/c/b_block0.nc", "w") as ds:
        ds.setncattr("n", 20)
        ds.createDimension("replicate", 2)
        ds.createDimension("point", 3)
        ds.createVariable("cost", "f8", ("replicate", "point"))[:] = np.array([[10.0, 20.0, 30.0], [5.0, 40.0, np.nan]])
    _meta(run, "results/c/b_block0.nc", "chains", split_at=10)  # a record split like a long path's

    _bench(run, "capacity", "pima_n10_split0", 4.0)
    (run / "results/cap").mkdir(parents=True)
    with netCDF4.Dataset(run / "results/cap/n10_split0.nc", "w") as ds:
        ds.setncattr("n_train", 10)
        ds.createDimension("classifier", 3)
        cl = ds.createVariable("classifier", str, ("classifier",))
        for i, name in enumerate(["ep_ml", "mcmc_ep", "mcmc_pm_ep"]):
            cl[i] = name
        ds.createVariable("n_cubic", "i8", ("classifier",))[:] = np.array([100, 200, 700])  # pm_ep's 700 holds ep's 200
    _meta(run, "results/cap/n10_split0.nc", "capacity")

    _bench(run, "mh", "housing_chains", 6.0)
    (run / "results/mh").mkdir(parents=True)
    with netCDF4.Dataset(run / "results/mh/ml.nc", "w") as ds:
        ds.setncattr("n", 30)
    _chain_file(run / "results/mh/chain_0.nc", np.array([[2, 2]]))
    _meta(run, "results/mh/chain_0.nc", "mh", inputs=["results/mh/ml.nc"])

    _bench(run, "regression_mh_merge", "housing_merge", 1.0)
    _chain_file(run / "results/mh/posterior.nc", np.array([[2, 2]]), attrs={"n": 30})
    _meta(run, "results/mh/posterior.nc", "regression_mh_merge")

    _bench(run, "figure", "fig1", 2.0)
    (run / "figures").mkdir()
    (run / "figures/fig1.pdf").write_text("%PDF")
    _meta(run, "figures/fig1.pdf", "figure")
    _meta(run, "results/c/deleted.nc", "chains")  # a record whose file is gone: skipped
    return run


def test_counted_operations_reads_each_kind_of_record(run):
    c = ops_profile.counted_operations(run / "results/c/a_block0.nc")
    assert (c.ops, c.n, c.warmup) == (1 + 2 + 3 + 4 + 5 + 6 + 7 + 8, 10, True)
    c = ops_profile.counted_operations(run / "results/c/b_block0.nc")
    assert (c.ops, c.n, c.warmup) == (30.0 + 40.0, 20, None)  # the last finite cumulative cost per replicate
    c = ops_profile.counted_operations(run / "results/cap/n10_split0.nc")
    assert (c.ops, c.n) == (100 + 700, 10)  # mcmc_ep's 200 counted once, inside mcmc_pm_ep's
    c = ops_profile.counted_operations(run / "results/mh/chain_0.nc", [run / "results/mh/ml.nc"])
    assert (c.ops, c.n, c.warmup) == (4, 30, False)
    assert ops_profile.counted_operations(run / "results/mh/chain_0.nc").n is None
    assert ops_profile.counted_operations(run / "results/mh/ml.nc") is None


def test_rule_outputs_decodes_snakemake_records_and_skips_missing_files(run):
    out = ops_profile.rule_outputs(run)
    assert sorted(out) == ["capacity", "chains", "figure", "mh", "regression_mh_merge"]
    assert [p.name for p, _, _ in out["chains"]] == ["a_block0.nc", "b_block0.nc"]
    assert out["mh"][0][1] == [run / "results/mh/ml.nc"]
    with pytest.raises(FileNotFoundError, match="no Snakemake metadata"):
        ops_profile.rule_outputs(run / "results")


def test_ratio_is_cpu_over_ops_times_one_cholesky(run):
    chol = lambda n: 1e-3 * n  # noqa: E731  (one Cholesky of n takes n ms, by construction)
    rows = {r.rule: r for r in ops_profile.ops_profile(run, chol)}
    r = rows["chains"]
    assert (r.jobs, r.cpu_s, r.ops, r.n_text, r.warmup) == (2, 8.0, 36 + 70, "10-20", "all")
    assert r.floor_s == pytest.approx(36 * 0.010 + 70 * 0.020)
    assert r.ratio == pytest.approx(8.0 / (36 * 0.010 + 70 * 0.020))
    assert r.s_per_op == pytest.approx(8.0 / 106) and r.chol_s == pytest.approx(r.floor_s / 106)
    assert rows["capacity"].ratio == pytest.approx(4.0 / (800 * 0.010))
    assert rows["mh"].ratio == pytest.approx(6.0 / (4 * 0.030)) and rows["mh"].warmup == "none"
    assert rows["figure"].note == "no counted operations" and math.isnan(rows["figure"].ratio)
    assert rows["regression_mh_merge"].ops == 0 and "copied" in rows["regression_mh_merge"].note
    assert [r.rule for r in ops_profile.ops_profile(run, chol)][:3] == ["chains", "mh", "capacity"]  # by CPU-s
    table = ops_profile.format_table(list(rows.values()))
    assert "| chains | 2 | 8.0 | 106 | 10-20 | all |" in table and "| figure | 1 | 2.0 | no counted operations |" in table


def test_cli_writes_csv_and_measures_each_n_once(run, tmp_path, monkeypatch, capsys):
    calls = []

    def fake(n, repeats=7, min_batch_s=0.02):
        calls.append(n)
        return [1e-3 * n] * repeats

    monkeypatch.setattr(ops_profile, "cholesky_cpu_s", fake)
    cache, out = tmp_path / "chol.json", tmp_path / "ops.csv"
    for _ in range(2):
        assert ops_profile.main([str(run), "--csv", str(out), "--cholesky-cache", str(cache), "--repeats", "3"]) == 0
    assert sorted(calls) == [10, 20, 30]  # the second run read the cache
    rows = {r["rule"]: r for r in csv.DictReader(out.open())}
    assert float(rows["chains"]["ratio"]) == pytest.approx(8.0 / 1.76, rel=1e-4)
    assert rows["figure"]["ratio"] == "" and rows["figure"]["note"] == "no counted operations"
    assert "| chains |" in capsys.readouterr().out


def test_a_counting_output_without_a_size_is_named(run):
    (run / "results/mh/ml.nc").unlink()
    with pytest.raises(ValueError, match="rule mh: no matrix size .*chain_0.nc"):
        ops_profile.ops_profile(run, lambda n: 1.0)


def test_cholesky_timing_is_a_positive_median_of_batches():
    runs = ops_profile.cholesky_cpu_s(16, repeats=3, min_batch_s=0.001)
    assert len(runs) == 3 and all(t > 0 and math.isfinite(t) for t in runs)
    with pytest.raises(ValueError, match="n must be >= 1"):
        ops_profile.cholesky_cpu_s(0)


def test_outputs_re_made_after_the_measured_run_are_not_counted(run):
    _meta(run, "results/c/b_block0.nc", "chains", split_at=10, endtime=500.0)  # a later run re-made it
    rows = {r.rule: r for r in ops_profile.ops_profile(run, lambda n: 1e-3 * n, until=200.0)}
    assert rows["chains"].ops == 0 and "1 of its 2 counting outputs were re-made" in rows["chains"].note
    assert rows["capacity"].ratio == pytest.approx(4.0 / 8.0)  # its output is the run's own
    assert ops_profile.ops_profile(run, lambda n: 1e-3 * n, until=None)[0].ops == 106  # no cut-off: all count
