"""The library's BLAS thread policy around sampling (issue 24 §3).

A sampler evaluates one n x n marginal after another; at the sizes of the papers' problems the
BLAS calls inside (a Cholesky, a triangular inverse, GEMMs of n x n x d) are too small for a
second thread to pay, and numpy and scipy each bring their own OpenBLAS with its own pool: with
the default threading two pools of busy-waiting threads share the cores and the same chain took
30x the CPU time on a 2-core machine (issue 24).  So the library runs its samplers with one BLAS
thread below :data:`CROSSOVER_N` rows and leaves the threading alone above it, unless the user
chose (any of ``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS`` set, or an
explicit ``limit``).  The limits are set with ``threadpoolctl`` on the BLAS/OpenMP libraries
loaded at the time and restored on exit.  The thread count can change the last bits of OpenBLAS
results (it does for the Cholesky and GEMMs of GP regression with this build: n = 300-2000, one
vs two threads), so draws are reproducible under the same policy -- which depends only on n and
the environment -- not across policies.  The reproduction's workflow scripts set one thread
themselves (``linalg.blas_single_thread``), so nothing changes for them.

:data:`CROSSOVER_N` was measured with ``benchmarks/bench_threads.py`` (benchmarks/README.md).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

__all__ = ["CROSSOVER_N", "USER_THREAD_VARIABLES", "user_chose_threads", "sampling_threads"]

#: n (rows of the n x n matrices) from which the BLAS threading is left to the BLAS library.
#: Measured (benchmarks/bench_threads.py, GP regression's value and gradient, AMD EPYC 2 cores,
#: shared, load average 8-9): one thread was faster in wall time (2 threads: 0.19-0.37x) and
#: 3-5x cheaper in CPU time at every n from 250 to 3000.  Above, on the machine near idle
#: (benchmarks/bench_threads.py --large, benchmarks/results/bench_threads_large.txt): a second thread
#: cut the wall time of one pseudo-marginal estimate by 1.10x at n = 3000 (0.92x in a second run),
#: 1.36x at 4000 and 1.60x at 5000, at 1.68x, 1.42x and 1.23x the CPU time; so the BLAS library's
#: threading from n = 4000, where it pays in wall time.
CROSSOVER_N = 4000

#: environment variables by which a user chooses the BLAS/OpenMP threading themselves
USER_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def user_chose_threads() -> bool:
    """True if any of :data:`USER_THREAD_VARIABLES` is set in the environment."""
    return any(os.environ.get(v) for v in USER_THREAD_VARIABLES)


@contextlib.contextmanager
def sampling_threads(n: int | None = None, limit: int | str | None = "auto") -> Iterator[int | None]:
    """Run the block with the library's BLAS thread policy; yields the thread limit set (None: none).

    ``limit="auto"`` (default): one thread if ``n`` (the size of the n x n matrices; None:
    unknown, treated as small) is below :data:`CROSSOVER_N` and the user has not set a thread
    variable (:func:`user_chose_threads`); otherwise nothing is changed.  An integer ``limit``
    sets that many threads whatever the environment; ``None`` changes nothing.

    Use around a sampler's run (the method objects call it around ``runner.run_spec``)::

        with sampling_threads(model.n):
            chain = runner.run_spec(rng, spec, n_draws=1000)
    """
    if limit == "auto":
        small = n is None or int(n) < CROSSOVER_N
        limit = 1 if (small and not user_chose_threads()) else None
    elif limit is not None and not (isinstance(limit, int) and limit >= 1):
        raise ValueError(f"limit must be 'auto', None or an integer >= 1, got {limit!r}")
    if limit is None:
        yield None
        return
    from threadpoolctl import threadpool_limits  # a dependency of gpbayes; imported where used

    with threadpool_limits(limits=int(limit)):
        yield int(limit)
