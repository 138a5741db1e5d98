"""End-to-end: the foundation slice of the real workflow (``scale=smoke``) through the Slurm executor.

The targets are the slice's figure and claims file (data preparation -> type-II ML -> one job per
MH chain -> merge -> diagnostics -> figure -> claims): every kind of job the workflow has, without
the other papers' many small jobs, whose Slurm status polling would dominate CI time.  The whole
workflow runs locally in tests/test_workflow.py.

Brings up a single-node Slurm with ``tools/slurm/start.sh`` (installs the Debian
packages on first use, hence root), runs Snakemake with ``workflow/profiles/slurm``
on a copy of the repository's tracked files and checks that

* Snakemake exits 0,
* jobs really went through Slurm (job ids parsed from Snakemake's output, and
  every one of them is COMPLETED according to squeue -- MinJobAge=3600 keeps
  finished jobs visible without an accounting database),
* every ``results/**/*.nc`` opens with xarray.

The Slurm daemons are left running afterwards (start.sh is idempotent, so later
runs reuse them); ``tools/slurm/stop.sh`` stops them.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
START_SH = REPO / "tools" / "slurm" / "start.sh"
SNAKEMAKE_TIMEOUT_S = 15 * 60
START_TIMEOUT_S = 10 * 60  # includes apt-get on a fresh machine
TAIL_LINES = 150

pytestmark = pytest.mark.slow

_SUBMITTED = re.compile(r"submitted with SLURM jobid (\d+)")
_ARRAY = re.compile(r"Submitted array job with Snakemake IDs ([\d,]+) and SLURM job ID (\d+)")


def _tail(text: str, n: int = TAIL_LINES) -> str:
    return "\n".join(text.splitlines()[-n:])


def _venv_bin() -> Path:
    """bin/ of the interpreter running the tests (snakemake is installed there)."""
    return Path(sys.executable).parent


def _skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "Slurm test needs root (tools/slurm/start.sh installs packages, starts daemons)"
    have_slurm = all(
        os.access(p, os.X_OK)
        for p in ("/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/bin/sbatch", "/usr/sbin/munged")
    )
    if not have_slurm and shutil.which("apt-get") is None:
        return "Slurm is not installed and apt-get is unavailable to install it"
    return None


@pytest.fixture(scope="module")
def slurm_cluster():
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    t0 = time.monotonic()
    proc = subprocess.run(
        ["bash", str(START_SH)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=START_TIMEOUT_S,
    )
    if proc.returncode != 0:
        pytest.fail(
            f"tools/slurm/start.sh failed (exit {proc.returncode}):\n"
            f"{_tail(proc.stdout)}\n--- stderr ---\n{_tail(proc.stderr)}"
        )
    print(f"\n[slurm] bring-up: {time.monotonic() - t0:.1f} s\n{_tail(proc.stdout, 5)}")
    yield


def _copy_tracked_files(dest: Path) -> None:
    """Copy the working-tree version of every file ``git ls-files`` lists.

    GPBAYES_TEST_UNTRACKED=1 also copies untracked, not-ignored files (for trying
    the test on uncommitted work; CI runs without it).
    """
    cmd = ["git", "ls-files", "-z", "--cached"]
    if os.environ.get("GPBAYES_TEST_UNTRACKED") == "1":
        cmd += ["--others", "--exclude-standard"]
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, check=True).stdout
    n = 0
    for rel in filter(None, out.decode().split("\0")):
        src = REPO / rel
        if not src.is_file():  # tracked but deleted in the working tree
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)
        n += 1
    assert n > 0, "git ls-files listed no files"


def _slurm_states(job_ids: list[str]) -> dict[str, str]:
    """job id -> state, as squeue sees it (finished jobs stay for MinJobAge)."""
    proc = subprocess.run(
        ["squeue", "-h", "-t", "all", "-j", ",".join(job_ids), "-o", "%i %T"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    states = {}
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2:
            states[parts[0]] = parts[1]
    return states


def _failed_job_logs(workdir: Path) -> str:
    """The plugin keeps the Slurm logs of failed jobs only; show their tails."""
    chunks = []
    for log in sorted((workdir / ".snakemake" / "slurm_logs").glob("**/*.log"))[-5:]:
        chunks.append(f"--- {log.relative_to(workdir)} ---\n{_tail(log.read_text(errors='replace'), 40)}")
    return "\n".join(chunks)


def _cancel(job_ids: list[str]) -> None:
    if job_ids:
        subprocess.run(["scancel", *job_ids], capture_output=True, timeout=60)


def test_workflow_smoke_through_slurm(slurm_cluster, tmp_path):
    workdir = tmp_path / "repo"
    _copy_tracked_files(workdir)
    snakefile = workdir / "workflow" / "Snakefile"
    profile = workdir / "workflow" / "profiles" / "slurm"
    # no skip here: a missing workflow is a failure of this test
    assert snakefile.is_file(), f"{snakefile.relative_to(workdir)} is not tracked in git"
    assert (profile / "config.yaml").is_file(), "Slurm profile is not tracked in git"

    bindir = _venv_bin()
    snakemake = bindir / "snakemake"
    assert snakemake.exists(), f"snakemake not found next to {sys.executable}"

    env = dict(os.environ)
    env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
    # Use the copy's package, not an editable install of the original checkout.
    # sbatch --export=ALL carries this (and the BLAS settings) into the jobs.
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(workdir / "src"), env.get("PYTHONPATH")) if p
    )
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env.pop("SLURM_JOB_ID", None)  # in case pytest itself runs inside a Slurm job

    cmd = [
        str(snakemake),
        # targets before --config, which would swallow them (nargs="*")
        "results/claims/foundation.json",
        "figures/regression_mh/housing_traces.pdf",
        # two jobs of one rule (a few seconds each): the profile submits them as one job array (the
        # foundation's chains are one job since they run together under the stop rule)
        "results/pm_gpc/capacity/thyroid/n20_split0.nc",
        "results/pm_gpc/capacity/glass/n20_split0.nc",
        "--snakefile", str(snakefile),
        "--profile", str(profile),
        # don't let workflow/profiles/default override the Slurm profile's
        # default-resources (see the comment at the top of the profile)
        "--workflow-profile", "none",
        "--directory", str(workdir),
        "--config", "scale=smoke",
    ]
    t0 = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        cwd=workdir,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=SNAKEMAKE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            output, _ = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            output, _ = proc.communicate()
        _cancel(_SUBMITTED.findall(output or ""))
        pytest.fail(
            f"snakemake timed out after {SNAKEMAKE_TIMEOUT_S} s:\n{_tail(output or '')}"
        )
    elapsed = time.monotonic() - t0
    job_ids = _SUBMITTED.findall(output)
    print(f"[slurm] workflow: {elapsed:.1f} s, {len(job_ids)} Slurm jobs")

    if proc.returncode != 0:
        pytest.fail(
            f"snakemake exited {proc.returncode} after {elapsed:.0f} s\n"
            f"command: {' '.join(cmd)}\n{_tail(output)}\n{_failed_job_logs(workdir)}"
        )

    arrays = _ARRAY.findall(output)
    # the profile submits every rule with several jobs as one job array (the two capacity splits)
    assert arrays and any(len(ids.split(",")) >= 2 for ids, _ in arrays), "no job array:\n" + _tail(output)
    states = _slurm_states(job_ids + [a for _, a in arrays])
    not_completed = {j: states.get(j, "<not in squeue>") for j in job_ids if states.get(j) != "COMPLETED"}
    for ids, a in arrays:  # every task <array id>_<index> of every array
        tasks = {j: st for j, st in states.items() if j.startswith(f"{a}_")}
        if len(tasks) != len(ids.split(",")) or set(tasks.values()) != {"COMPLETED"}:
            not_completed[a] = tasks or "<not in squeue>"
    assert not not_completed, f"Slurm jobs not COMPLETED: {not_completed}"

    import xarray as xr

    ncs = sorted((workdir / "results").glob("**/*.nc"))
    assert ncs, "the workflow produced no results/**/*.nc"
    for nc in ncs:
        with xr.open_dataset(nc) as ds:
            ds.load()
    print(f"[slurm] {len(ncs)} NetCDF files under results/ open with xarray")
