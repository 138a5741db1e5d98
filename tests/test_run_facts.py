"""Run facts (gpbayes_repro.run_facts): the docs' run time, CPU and job counts come from one committed file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpbayes_repro import run_facts

ROOT = Path(__file__).resolve().parents[1]

# /usr/bin/time -v of the README's first command as the stopped default run of 0b0c765 (/work/runs/base, issue 34)
# reported it: the development fixture, a partial run
TIME_PARTIAL = """\tCommand terminated by signal 9
\tCommand being timed: "bash -c python3 -m venv .venv && .venv/bin/pip install -q -e ".[workflow]" && .venv/bin/snakemake --cores 2"
\tUser time (seconds): 6778.01
\tSystem time (seconds): 636.13
\tPercent of CPU this job got: 93%
\tElapsed (wall clock) time (h:mm:ss or m:ss): 2:12:44
\tExit status: 0
"""
TIME_FINISHED = """\tCommand being timed: "bash -c ..."
\tUser time (seconds): 2700.50
\tSystem time (seconds): 299.50
\tElapsed (wall clock) time (h:mm:ss or m:ss): 30:00.00
\tExit status: 0
"""


def test_docs_run_facts_are_generated_from_the_committed_facts_file():
    """One source: README.md's and docs/workflow.md's run time, CPU and job counts are what
    `python -m gpbayes_repro.run_facts --update` makes of benchmarks/results/run_facts.json (no drift)."""
    for (path, name), text in run_facts.generated_blocks(ROOT).items():
        assert not run_facts.update_file(path, name, text, check=True), (
            f"{path} [{name}] is out of date: run python -m gpbayes_repro.run_facts --update")


def test_committed_facts_are_a_finished_default_run_with_every_scale_counted():
    facts = json.loads((ROOT / run_facts.FACTS).read_text())
    run = facts["runs"]["default"]
    assert not run.get("partial") and run["jobs_done"] == run["jobs_total"] > facts["planned_jobs"]["smoke"]
    assert sorted(facts["planned_jobs"]) == sorted(run_facts.SCALES)
    assert run["benchmark_cpu_s"] < run["user_s"] + run["system_s"]  # the records are a part of the total
    assert set(run["benchmark_cpu_s_by_rules_file"]) <= set(run_facts.PARTS)


def _run_dir(tmp_path, steps=(430, 430)):
    run = tmp_path / "run"
    for rule, name, cpu in [("amis_run", "a_block0", 100.0), ("amis_run", "b_block0", 50.0),
                            ("slice_ma_chains", "m_block0", 30.0), ("prepare_data", "pima", 0.5)]:
        d = run / "benchmarks" / rule
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{name}.tsv").write_text(f"s\th:m:s\tmax_rss\tcpu_time\n{cpu + 1}\t0:00:01\t90.0\t{cpu}\n")
    rules = run / "workflow" / "rules"
    rules.mkdir(parents=True)
    (rules / "amis.smk").write_text("rule amis_run:\n    output: 'x'\n\ncheckpoint amis_look:\n    output: 'y'\n")
    (rules / "slice_ma.smk").write_text("rule slice_ma_chains:\n    output: 'z'\n")
    (rules / "data.smk").write_text("rule prepare_data:\n    output: 'p'\n")
    log = run / ".snakemake" / "log"
    log.mkdir(parents=True)
    (log / "2026-11-27T000000.000000.snakemake.log").write_text("old\n1 of 5 steps (20%) done\n")
    (log / "2026-11-28T000000.000000.snakemake.log").write_text(
        f"Building DAG\n{steps[0] - 1} of {steps[1]} steps (99%) done\n{steps[0]} of {steps[1]} steps "
        f"({100 * steps[0] // steps[1]}%) done\n")
    mon = tmp_path / "monitor.log"
    mon.write_text("1000 pid=7 utime_ticks=100 stime_ticks=50 cutime_ticks=0 cstime_ticks=0 load=1.5\n"
                   "1010 pid=7 utime_ticks=3000 stime_ticks=1500 cutime_ticks=17000 cstime_ticks=1000 load=2.5\n")
    (tmp_path / "up0.txt").write_text(" 02:23:42 up  3:12,  0 user,  load average: 0.13, 1.26, 1.91\n")
    (tmp_path / "up1.txt").write_text(" 02:53:42 up  3:42,  0 user,  load average: 1.90, 1.95, 1.80\n")
    (tmp_path / "cpuinfo").write_text("processor\t: 0\nmodel name\t: AMD EPYC 7B13\n\nprocessor\t: 1\n"
                                      "model name\t: AMD EPYC 7B13\n")
    return run


def _record(tmp_path, run, time_text, **kw):
    (tmp_path / "time.txt").write_text(time_text)
    return run_facts.record(run, tmp_path / "time.txt", tmp_path / "monitor.log", tmp_path / "up0.txt",
                            tmp_path / "up1.txt", cpuinfo=tmp_path / "cpuinfo", commit="abcdef1234567", **kw)


def test_record_reads_time_monitor_uptime_logs_and_records(tmp_path):
    run = _run_dir(tmp_path)
    smoke = _record(tmp_path, run, TIME_FINISHED, scale="smoke", planned={"paper": 1705})
    facts = _record(tmp_path, run, TIME_FINISHED, planned={"smoke": 180, "default": 430}, facts=smoke)
    r = facts["runs"]["default"]
    assert (r["wall_s"], r["user_s"], r["system_s"]) == (1800.0, 2700.5, 299.5)
    assert (r["snakemake_process_cpu_s"], r["snakemake_children_cpu_s"], r["monitor_mean_load"]) == (45.0, 180.0, 2.0)
    assert (r["load_before"], r["load_after"]) == ([0.13, 1.26, 1.91], [1.90, 1.95, 1.80])
    assert (r["jobs_done"], r["jobs_total"], r["benchmark_records"]) == (430, 430, 4)  # the latest log counts
    assert r["benchmark_cpu_s"] == 180.5
    assert r["benchmark_cpu_s_by_rules_file"] == {"amis": 150.0, "data": 0.5, "slice_ma": 30.0}
    assert (r["cpu_model"], r["logical_cpus"], r["commit"]) == ("AMD EPYC 7B13", 2, "abcdef1234567")
    assert "partial" not in r and facts["runs"]["smoke"] == r  # the other scale's entry is kept
    assert facts["planned_jobs"] == {"paper": 1705, "smoke": 180, "default": 430}

    readme = run_facts.readme_block(facts)
    assert "**30 minutes** of wall time and **50 CPU-minutes**, 430 jobs (" in readme and "AMD EPYC 7B13" in readme
    busy = {**facts, "runs": {"default": {**r, "monitor_mean_load": 5.6}}}
    assert "430 jobs, on a shared machine (mean load 5.6 on 2 cores" in run_facts.readme_block(busy)
    table = run_facts.scales_block(facts)
    assert "| default | 430 | 430 | 30 min | 50 | 1.5 % of the CPU |" in table  # 45 s of 3,000 CPU-s
    assert "| paper | 1,705 | | | | | no measured run in run_facts.json |" in table and "| smoke | 180 | 430 |" in table
    assert "| decide | not counted |" in table
    assert "Xiong et al. (AMIS) 2.5, Murray & Adams 2010 0.5, data preparation and claims 0.0" in table


def test_a_stopped_run_is_refused_unless_marked_partial_and_the_docs_refuse_it(tmp_path):
    run = _run_dir(tmp_path, steps=(340, 430))
    with pytest.raises(ValueError, match="killed by signal 9.*340 of 430 steps"):
        _record(tmp_path, run, TIME_PARTIAL)
    facts = _record(tmp_path, run, TIME_PARTIAL, allow_partial=True)
    r = facts["runs"]["default"]
    assert r["partial"] is True and (r["wall_s"], r["user_s"] + r["system_s"]) == (7964.0, pytest.approx(7414.14))
    root = tmp_path / "repo"
    (root / run_facts.FACTS).parent.mkdir(parents=True)
    (root / run_facts.FACTS).write_text(json.dumps(facts))
    with pytest.raises(ValueError, match=r"runs \['default'\] are partial"):
        run_facts.generated_blocks(root)


def test_update_file_rewrites_only_its_block_and_refuses_missing_markers(tmp_path):
    begin, end = run_facts.markers("readme")
    doc = tmp_path / "README.md"
    doc.write_text(f"intro\n{begin}\nold\n{end}\n<!-- claims-summary:begin -->\nkept\n")
    assert run_facts.update_file(doc, "readme", "new", check=True) and "old" in doc.read_text()
    assert run_facts.update_file(doc, "readme", "new")
    assert doc.read_text() == f"intro\n{begin}\nnew\n{end}\n<!-- claims-summary:begin -->\nkept\n"
    assert not run_facts.update_file(doc, "readme", "new\n")
    with pytest.raises(ValueError, match="expected one generated block .*run-facts:scales:begin"):
        run_facts.update_file(doc, "scales", "x")


def test_planned_jobs_dry_runs_each_scale_in_a_clean_export(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "Snakefile").write_text("committed\n")
    git = ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "Snakefile"], check=True)
    subprocess.run(git + ["commit", "-qm", "c"], check=True)
    (repo / "results").mkdir()  # an uncommitted result: not in the export, so every job is planned
    fake = tmp_path / "fake_snakemake.py"
    fake.write_text("import os, sys\nassert not os.path.exists('results') and open('Snakefile').read() == 'committed\\n'\n"
                    "scale = sys.argv[sys.argv.index('--config') + 1].split('=')[1]\n"
                    "print('Job stats:\\njob  count\\nall  1\\ntotal  ' + str({'smoke': 12, 'paper': 3400}[scale]))\n")
    assert run_facts.planned_jobs(repo, "HEAD", ("smoke", "paper"), [sys.executable, str(fake)]) == {
        "smoke": 12, "paper": 3400}
    with pytest.raises(RuntimeError, match="dry run at scale=default"):
        run_facts.planned_jobs(repo, "HEAD", ("default",), [sys.executable, str(fake)])


def test_committed_ops_table_is_of_the_same_run_as_the_facts():
    """benchmarks/results/ops_profile_default.csv (python -m gpbayes_repro.ops_profile) read the run the facts
    describe: the same benchmark records, job for job and CPU-second for CPU-second."""
    import csv

    run = json.loads((ROOT / run_facts.FACTS).read_text())["runs"]["default"]
    rows = list(csv.DictReader((ROOT / "benchmarks/results/ops_profile_default.csv").open()))
    assert sum(int(r["jobs"]) for r in rows) == run["benchmark_records"]
    assert sum(float(r["cpu_s"]) for r in rows) == pytest.approx(run["benchmark_cpu_s"], abs=0.05)
