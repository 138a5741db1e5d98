"""Issue 34: the Snakemake process's own CPU -- greedy scheduler, no default job-rate limiter."""

from pathlib import Path
from types import SimpleNamespace

import yaml

from gpbayes_repro.workflow import SNAKEMAKE_DEFAULT_RATE, drop_default_rate_limiter

REPO = Path(__file__).resolve().parents[1]


def _workflow_with(limit: str):
    """A stand-in workflow whose scheduler holds the installed Snakemake's rate limiter for ``limit``."""
    from snakemake.scheduling.job_scheduler import JobRateLimiter
    from snakemake.settings.types import MaxJobsPerTimespan

    return SimpleNamespace(scheduler=SimpleNamespace(job_rate_limiter=JobRateLimiter(MaxJobsPerTimespan.parse_choice(limit))))


def test_the_default_limit_is_dropped_and_a_chosen_one_kept():
    wf = _workflow_with("100/1s")  # Snakemake's CLI default
    assert (wf.scheduler.job_rate_limiter.max_jobs, wf.scheduler.job_rate_limiter.timespan) == SNAKEMAKE_DEFAULT_RATE
    assert drop_default_rate_limiter(wf) is True and wf.scheduler.job_rate_limiter is None
    assert drop_default_rate_limiter(wf) is False  # nothing left to drop
    chosen = _workflow_with("10/1m")
    assert drop_default_rate_limiter(chosen) is False and chosen.scheduler.job_rate_limiter is not None
    assert drop_default_rate_limiter(SimpleNamespace()) is False  # a Snakemake without the attribute: untouched


def test_the_workflow_uses_both_settings():
    snakefile = (REPO / "workflow" / "Snakefile").read_text()
    assert "onstart:\n    drop_default_rate_limiter(workflow)\n" in snakefile
    for profile in ("default", "slurm"):
        cfg = yaml.safe_load((REPO / "workflow" / "profiles" / profile / "config.yaml").read_text())
        assert cfg["scheduler"] == "greedy", profile
