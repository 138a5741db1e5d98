"""One BLAS thread per workflow process (moved here from the library: it is the workflow's scheduling choice).

See README "Performance": chains run as separate Snakemake jobs, each with a
single BLAS thread.
"""

from __future__ import annotations

import os

__all__ = ["blas_single_thread"]

_BLAS_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def blas_single_thread():
    """Limit every BLAS/OpenMP pool in this process to one thread.

    numpy and scipy each bundle their own OpenBLAS; two pools with two
    threads each on a two-core machine oversubscribe it and ran 2-4x slower
    here.  Workflow scripts call this first; chains are parallelised as
    separate Snakemake jobs instead.  Returns the threadpoolctl limiter.
    """
    for var in _BLAS_ENV:
        os.environ.setdefault(var, "1")
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)
