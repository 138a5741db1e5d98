"""Glue for the thin Snakemake scripts: logging, one BLAS thread, provenance."""

from __future__ import annotations

import contextlib
import logging
import sys
import time
import traceback
from pathlib import Path

from gpbayes_repro.threads import blas_single_thread

__all__ = ["job", "damaged_inputs", "DamagedInputError", "drop_default_rate_limiter", "SNAKEMAKE_DEFAULT_RATE"]


#: Snakemake's default ``--max-jobs-per-timespan`` (jobs, seconds): the limit that
#: :func:`drop_default_rate_limiter` removes; any other limit a user sets is kept.
SNAKEMAKE_DEFAULT_RATE = (100, 1.0)


def drop_default_rate_limiter(workflow) -> bool:
    """Run the scheduler without Snakemake's default job-rate limiter; True if one was removed.

    Called from the Snakefile's ``onstart:`` (after Snakemake builds its scheduler, before the
    first job).  With a rate limiter, Snakemake 9's scheduler loop re-arms a ``threading.Timer``
    of the limit's timespan on every pass, and every finished job wakes the loop once more, so
    the timers multiply: after N finished jobs the loop runs N times per timespan (1 s by
    default), each pass stat-ing every ready job's inputs (measured, issue 34: the Snakemake
    process used 90.6 CPU-s of a 444 CPU-s smoke run; one live timer thread per finished job).
    The default limit (100 submissions per second) never binds here -- at most ``--cores`` (or
    the Slurm profile's ``jobs:``) run at once -- so it is dropped; a limit given with
    ``--max-jobs-per-timespan`` other than the default is kept.  Touches one attribute of
    Snakemake's scheduler (``workflow.scheduler.job_rate_limiter``, Snakemake >= 8.20); if a
    later Snakemake renames it, nothing is changed and False is returned.
    """
    limiter = getattr(getattr(workflow, "scheduler", None), "job_rate_limiter", None)
    if limiter is None:
        return False
    if (getattr(limiter, "max_jobs", None), float(getattr(limiter, "timespan", -1))) != SNAKEMAKE_DEFAULT_RATE:
        return False
    workflow.scheduler.job_rate_limiter = None
    return True


class DamagedInputError(RuntimeError):
    """An input file of a job cannot be read (e.g. a NetCDF cut short when its writer was killed)."""


def damaged_inputs(paths) -> list[tuple[Path, str]]:
    """The NetCDF files among ``paths`` that cannot be opened and read, with the reader's message.

    A file written through ``gpbayes.io.atomic_path`` is complete or absent, so a damaged
    intermediate comes from outside the workflow (a copy cut short, a full disk, a file
    edited by hand); every group and variable is loaded, so a truncated array is found too.
    """
    import netCDF4

    bad = []
    for p in map(Path, paths):
        if p.suffix != ".nc" or not p.exists():
            continue
        try:
            with netCDF4.Dataset(p) as ds:
                stack = [ds]
                while stack:
                    g = stack.pop()
                    for v in g.variables.values():
                        v[...]
                    stack.extend(g.groups.values())
        except Exception as err:  # noqa: BLE001 -- any failure to read is what we report
            bad.append((p, f"{type(err).__name__}: {err}"))
    return bad


@contextlib.contextmanager
def job(smk):
    """Run a workflow script body: log to ``smk.log[0]``, one BLAS thread.

    Exceptions are written to the log with their traceback and re-raised so
    that Snakemake marks the job failed (and deletes its partial outputs).
    """
    log_path = Path(smk.log[0]) if len(smk.log) else None
    stream = open(log_path, "w") if log_path else sys.stderr
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logger = logging.getLogger("gpbayes")
    # the reproduction package's own loggers (gpbayes_repro.data.prepare reports a user set's label
    # mapping and dropped columns) are not children of "gpbayes": they go to the job's log as well
    repro = logging.getLogger("gpbayes_repro")
    for lg in (logger, repro):
        lg.addHandler(handler)
        lg.setLevel(logging.INFO)
    t0 = time.perf_counter()
    try:
        with blas_single_thread(), contextlib.redirect_stdout(stream):
            logger.info("rule %s: inputs %s -> outputs %s", smk.rule, list(smk.input), list(smk.output))
            yield logger
            logger.info("done in %.2f s", time.perf_counter() - t0)
    except BaseException as err:
        stream.write(traceback.format_exc())
        stream.flush()
        bad = damaged_inputs(list(smk.input)) if isinstance(err, Exception) else []
        if bad:
            # a damaged input fails its consumer every time, with what to do: it is moved aside, so that the
            # next run finds it missing and recomputes it (Snakemake would otherwise take it as done)
            lines = []
            for p, why in bad:
                aside = p.with_name(p.name + ".damaged")
                p.replace(aside)
                lines.append(f"  {p} ({why}); moved to {aside}")
            msg = (f"rule {smk.rule}: input file(s) damaged (cannot be read):\n" + "\n".join(lines)
                   + "\nrun the same snakemake command again to recompute them (or delete the .damaged copies)")
            stream.write(msg + "\n")
            stream.flush()
            raise DamagedInputError(msg) from err
        raise
    finally:
        for lg in (logger, repro):
            lg.removeHandler(handler)
        if log_path:
            stream.close()
