"""gpbayes_repro.run_profile: a run's CPU by kind and by rule, from small synthetic run directories."""

import json
import sys

import pytest

from gpbayes_repro import run_profile as rp

HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"

TIME_V = """\tCommand being timed: "bash -c python3 -m venv .venv && .venv/bin/snakemake --cores 2"
\tUser time (seconds): 100.50
\tSystem time (seconds): 9.50
\tPercent of CPU this job got: 180%
\tElapsed (wall clock) time (h:mm:ss or m:ss): 1:01:05
\tMaximum resident set size (kbytes): 300000
\tExit status: 0
"""


def make_run(tmp, records, smk_text, scripts):
    """A run directory: benchmarks/<rule>/<name>.tsv, workflow/rules/x.smk, workflow/scripts/*.py."""
    for rule, name, cpu in records:
        d = tmp / "benchmarks" / rule
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{name}.tsv").write_text(HEADER + f"{cpu + 1}\t0:00:01\t100\t0\t0\t0\t0\t0\t90\t{cpu}\n")
    (tmp / "workflow" / "rules").mkdir(parents=True)
    (tmp / "workflow" / "scripts").mkdir(parents=True)
    (tmp / "workflow" / "rules" / "x.smk").write_text(smk_text)
    for name, text in scripts.items():
        (tmp / "workflow" / "scripts" / name).write_text(text)
    return tmp


SMK = '''rule chain:
    """A chain."""
    output:
        "a.nc",
    benchmark:
        "benchmarks/chain/{x}.tsv"
    script:
        "../scripts/chain.py"


checkpoint look:
    output:
        "look.json",
    script:
        "../scripts/look.py"


rule all:
    input:
        "a.nc",
'''


def test_rule_scripts_reads_rules_and_checkpoints(tmp_path):
    run = make_run(tmp_path, [], SMK, {"chain.py": "import json\n", "look.py": "pass\n"})
    scripts = rp.rule_scripts(run / "workflow" / "rules")
    assert scripts == {"chain": (run / "workflow/scripts/chain.py").resolve(),
                       "look": (run / "workflow/scripts/look.py").resolve()}
    with pytest.raises(FileNotFoundError, match="no rules directory"):
        rp.rule_scripts(tmp_path / "nowhere")


def test_script_imports_keeps_nested_imports_once(tmp_path):
    p = tmp_path / "s.py"
    p.write_text("import json\nfrom pathlib import Path\nwith open('x') as f:\n    import json\n    import csv\n")
    assert rp.script_imports(p) == "import json\nfrom pathlib import Path\nimport csv"


def test_process_cpu_s_measures_the_child_and_names_a_failure():
    busy = rp.process_cpu_s("s = 0\nfor i in range(3_000_000): s += i")
    idle = rp.process_cpu_s("pass")
    assert busy > idle > 0
    with pytest.raises(RuntimeError, match="no_such_module"):
        rp.process_cpu_s("import no_such_module")


def test_startup_cache_measures_once_and_reuses(tmp_path):
    path = tmp_path / "cache.json"
    cache = rp.StartupCache(path, repeats=3)
    first = cache.cpu_s("import json")
    stored = json.loads(path.read_text())
    (entry,) = stored.values()
    assert len(entry["runs"]) == 3 and entry["cpu_s"] == first and entry["code"] == "import json"
    # a second cache on the same file does not measure again: a doctored value comes back as stored
    entry["cpu_s"] = 123.0
    path.write_text(json.dumps(stored))
    assert rp.StartupCache(path, repeats=3).cpu_s("import json") == 123.0
    # another PYTHONPATH is another key
    assert rp.StartupCache(path, pythonpath=str(tmp_path), repeats=1).cpu_s("import json") != 123.0
    with pytest.raises(ValueError, match="repeats"):
        rp.StartupCache(None, repeats=0)


def test_read_monitor_takes_the_last_sample_and_refuses_a_wrapper(tmp_path):
    log = tmp_path / "m.log"
    log.write_text("100 pid=7 utime_ticks=50 stime_ticks=10 cutime_ticks=0 cstime_ticks=0 load=1.0\n"
                   "130 pid=7 utime_ticks=250 stime_ticks=50 cutime_ticks=4000 cstime_ticks=200 load=2.0\n")
    m = rp.read_monitor(log)
    assert (m.pid, m.samples, m.span_s, m.self_cpu_s, m.children_cpu_s, m.mean_load) == (7, 2, 30.0, 3.0, 42.0, 1.5)
    assert m.self_core_share == pytest.approx(0.1)
    # the lead's first monitor format: no children's ticks
    log.write_text("100 pid=7 utime_ticks=50 stime_ticks=10 load=1.0\n")
    assert rp.read_monitor(log).children_cpu_s is None
    log.write_text("100 pid=7 utime_ticks=0 stime_ticks=0 load=1.0\n130 pid=7 utime_ticks=0 stime_ticks=0 load=2\n")
    with pytest.raises(ValueError, match="used no CPU"):
        rp.read_monitor(log)
    log.write_text("100 pid=7 utime_ticks=9 stime_ticks=0\n130 pid=7 utime_ticks=5 stime_ticks=0\n")
    with pytest.raises(ValueError, match="go down"):
        rp.read_monitor(log)
    log.write_text("100 pid=7 utime_ticks=9 stime_ticks=0\n130 pid=8 utime_ticks=10 stime_ticks=0\n")
    with pytest.raises(ValueError, match="several processes"):
        rp.read_monitor(log)
    log.write_text("garbage\n")
    with pytest.raises(ValueError, match="m.log:1"):
        rp.read_monitor(log)


def test_read_time_parses_gnu_time(tmp_path):
    p = tmp_path / "t.txt"
    p.write_text(TIME_V)
    t = rp.read_time(p)
    assert (t.user_s, t.system_s, t.cpu_s, t.wall_s, t.exit_status) == (100.5, 9.5, 110.0, 3665.0, 0)
    p.write_text("nothing\n")
    with pytest.raises(ValueError, match="/usr/bin/time -v"):
        rp.read_time(p)


def test_main_splits_the_run_by_kind_and_rule(tmp_path, capsys):
    run = make_run(tmp_path, [("chain", "a", 10.0), ("chain", "b", 14.0), ("look", "l", 1.0)], SMK,
                   {"chain.py": "import json\n", "look.py": "import csv\n"})
    (tmp_path / "m.log").write_text(
        "100 pid=7 utime_ticks=100 stime_ticks=20 cutime_ticks=0 cstime_ticks=0 load=1.0\n"
        "160 pid=7 utime_ticks=500 stime_ticks=100 cutime_ticks=2800 cstime_ticks=200 load=2.0\n")
    (tmp_path / "t.txt").write_text(TIME_V)
    # start-up measured with a fake cache: the report's arithmetic is checked exactly
    cache = rp.StartupCache(tmp_path / "c.json", pythonpath="", repeats=1)
    fixed = {"pass": 0.01, rp.PREAMBLE_IMPORTS: 0.1,
             rp.PREAMBLE_IMPORTS + "\nimport json": 0.5, rp.PREAMBLE_IMPORTS + "\nimport csv": 0.25}
    cache._data = {cache._key(code): {"cpu_s": v, "runs": [v], "code": code} for code, v in fixed.items()}
    cache.save()
    out_file = tmp_path / "out" / "report.txt"
    assert rp.main([str(run), "--monitor", str(tmp_path / "m.log"), "--time", str(tmp_path / "t.txt"),
                    "--startup-cache", str(tmp_path / "c.json"), "--pythonpath", "", "-o", str(out_file)]) == 0
    out = capsys.readouterr().out
    assert out_file.read_text() == out
    # records 25.0 s; start-up 2 x 0.5 + 1 x 0.25 = 1.25; science 23.75; children 30 - 25 = 5;
    # Snakemake 6.0 s (10 % of a core over 60 s); outside 110 - 6 - 30 = 74
    assert "| jobs: start-up (interpreter, Snakemake preamble, script imports) | 1.2 |" in out
    assert "| jobs: science (the records less their start-up) | 23.8 |" in out
    assert "| jobs: CPU outside the records (last sampling interval, bash, cbc) | 5.0 |" in out
    assert "| Snakemake process itself | 6.0 | 0.1 | 5.5% |" in out
    assert "| outside Snakemake's process tree (venv, pip install, if timed) | 74.0 |" in out
    assert "| **total (/usr/bin/time user + system)** | 110.0 |" in out
    assert "(10.0 % of one core)" in out
    assert "| chain | chain.py | 2 | 24.0 | 12.00 | 0.50 | 1.0 | 4% |" in out
    assert "| look | look.py | 1 | 1.0 | 1.00 | 0.25 | 0.2 | 25% |" in out
    assert "| **total** | | 3 | 25.0 | 8.33 | 0.42 | 1.2 | 5% |" in out


def test_kinds_without_monitor_or_start_up(tmp_path):
    run = make_run(tmp_path, [("chain", "a", 10.0)], SMK, {"chain.py": "import json\n", "look.py": "pass\n"})
    (tmp_path / "t.txt").write_text(TIME_V)
    rows = rp.kinds(rp.profile(run / "benchmarks"), None, None, rp.read_time(tmp_path / "t.txt"))
    assert [(k.kind, k.cpu_s) for k in rows] == [("jobs (benchmark records)", 10.0),
                                                  ("outside the records (Snakemake, venv, pip, unrecorded)", 100.0)]


def test_main_measures_start_up_of_real_scripts(tmp_path, capsys):
    """End to end with real measurements: the stdlib-only script starts faster than one importing the preamble's snakemake."""
    run = make_run(tmp_path, [("chain", "a", 5.0)], SMK, {"chain.py": "import json\n", "look.py": "pass\n"})
    assert rp.main([str(run), "--repeats", "1", "--startup-cache", str(tmp_path / "c.json"),
                    "--python", sys.executable]) == 0
    out = capsys.readouterr().out
    assert "start-up of one job without script imports: interpreter" in out
    cache = json.loads((tmp_path / "c.json").read_text())
    by_code = {v["code"]: v["cpu_s"] for v in cache.values()}
    assert by_code[rp.PREAMBLE_IMPORTS] > by_code["pass"]
