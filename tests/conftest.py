"""Test-session set-up shared by every test module.

* One BLAS thread per process (the project's rule): the suite runs on
  ``pytest-xdist`` workers, one per core, and each worker is a separate process.
  The variables are set here, before any worker starts, so the workers inherit them.
* The end-to-end tests (marked ``slow``: the smoke workflow, the Slurm run) take
  minutes each; they are moved to the front of the queue so that they start first
  and the short tests fill the other worker around them, instead of one long
  test running alone at the end.
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


def pytest_collection_modifyitems(config, items):
    slow = [it for it in items if it.get_closest_marker("slow") is not None]
    fast = [it for it in items if it.get_closest_marker("slow") is None]
    items[:] = slow + fast
