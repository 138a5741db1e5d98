"""Glue for the thin Snakemake scripts: logging, one BLAS thread, provenance."""

from __future__ import annotations

import contextlib
import logging
import sys
import time
import traceback
from pathlib import Path

from gpbayes_repro.threads import blas_single_thread

__all__ = ["job"]


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
    except BaseException:
        stream.write(traceback.format_exc())
        stream.flush()
        raise
    finally:
        for lg in (logger, repro):
            lg.removeHandler(handler)
        if log_path:
            stream.close()
