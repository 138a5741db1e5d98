"""Test-session set-up shared by every test module.

* One BLAS thread per process (the project's rule): the suite runs on
  ``pytest-xdist`` workers, one per core, and each worker is a separate process.
  The variables are set here, before any worker starts, so the workers inherit them.
* The end-to-end tests (marked ``slow``: the smoke workflow, the Slurm run) take
  minutes each; they are moved to the front of the queue so that they start first
  and the short tests fill the other worker around them, instead of one long
  test running alone at the end.
* The same floating-point code path on every x86-64 machine.  The golden-file
  tests (``test_numerics_golden``, ``test_runner``, ``test_sparse``, ...)
  compare chains bit for bit with arrays stored on an AVX2 machine.  numpy
  (>= 2.0) and OpenBLAS choose their kernels at run time from the CPU: on an
  AVX-512 machine numpy's ``exp``/``log``/reductions and OpenBLAS' SkylakeX
  GEMM/TRSM kernels round differently in the last bit, and a chain that
  differs in the last bit of one proposal diverges.  The numbers are not wrong
  there, only not the stored ones; so the suite pins the AVX2 code path:
  numpy's AVX-512 dispatch targets are disabled (``NPY_DISABLE_CPU_FEATURES``;
  names numpy does not dispatch are ignored with an ImportWarning) and
  OpenBLAS uses its Haswell kernels (``OPENBLAS_CORETYPE``).  Both are set
  only where the CPU has the feature, and only if the user has not set them;
  they must be set before numpy is imported, so here, before any worker or
  workflow subprocess starts (those inherit them).  Measured on a Sapphire
  Rapids machine: 56 bit-for-bit tests fail without them, none with them.
  The workflow itself does not pin them (the Haswell kernels are slower on an
  AVX-512 machine); README "Conventions" says how to reproduce the stored
  arrays on another CPU.
"""

import os


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

_flags = _cpu_flags()
if "avx512f" in _flags:
    # numpy 2.4 names (X86_V4 and what builds on it) and numpy 2.0-2.3 names
    os.environ.setdefault(
        "NPY_DISABLE_CPU_FEATURES",
        "X86_V4 AVX512_ICL AVX512_SPR AVX512F AVX512CD AVX512_SKX AVX512_CLX AVX512_CNL",
    )
if "avx2" in _flags:
    os.environ.setdefault("OPENBLAS_CORETYPE", "Haswell")


def pytest_collection_modifyitems(config, items):
    slow = [it for it in items if it.get_closest_marker("slow") is not None]
    fast = [it for it in items if it.get_closest_marker("slow") is None]
    items[:] = slow + fast
