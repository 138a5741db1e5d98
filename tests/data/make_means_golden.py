"""Make ``tests/data/means_golden.npz``: results of the models without a mean, from the code before
``mean=`` existed (commit 8a93f7c), so that ``tests/test_means.py`` can show that ``mean=None`` (the
default) changes no number.

Run from the repository root on the tree of that commit, with the floating-point code path the test
suite pins (``tests/conftest.py``: one BLAS thread, OpenBLAS' Haswell kernels and, on an AVX-512 CPU,
numpy's AVX-512 dispatch disabled)::

    git archive 8a93f7c src | tar -x -C /tmp/base
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 OPENBLAS_CORETYPE=Haswell \
    NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL AVX512_SPR AVX512F AVX512CD AVX512_SKX AVX512_CLX AVX512_CNL" \
    PYTHONPATH=/tmp/base/src python tests/data/make_means_golden.py

(made on an AMD EPYC with AVX-512.)

The runs (one chain each, ``cores=1``) are ``golden_runs`` below; the test calls the same function.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np


def golden_runs(gb) -> dict[str, np.ndarray]:
    """Short runs of GPRegressor (random-walk MH, predict, posterior predictive) and GPClassifier (AA
    Gibbs keeping f, predict) on fixed data and seeds; their arrays by name."""
    rng = np.random.default_rng(11)
    X = rng.uniform(-2, 2, size=(25, 2))
    y = np.sin(2 * X[:, 0]) + 0.3 * X[:, 1] + 3.0 + 0.1 * rng.normal(size=25)
    Xs = rng.uniform(-2, 2, size=(5, 2))
    reg = gb.GPRegressor(X, y)
    idata = gb.sample(reg, method="rwmh", chains=1, draws=30, n_warmup=30, seed=4, cores=1, progress=False,
                      posterior_predictive=True)
    pred = gb.predict(reg, idata, Xs)
    clf = gb.GPClassifier(X, y > 3.0)
    idc = gb.sample(clf, method="aa", keep_latent=True, chains=1, draws=20, n_warmup=20, seed=5, cores=1,
                    progress=False)
    pc = gb.predict(clf, idc, Xs)
    return {"reg_psi": gb.api.psi_draws(idata).values, "reg_mean": pred["mean"].values,
            "reg_sd_f": pred["sd_f"].values, "reg_y_rep": idata.posterior_predictive["y"].values,
            "clf_psi": gb.api.psi_draws(idc).values, "clf_f": idc.posterior["f"].values,
            "clf_probability": pc["probability"].values}


if __name__ == "__main__":
    import warnings

    import gpbayes as gb

    warnings.simplefilter("ignore")
    out = Path(__file__).with_name("means_golden.npz")
    np.savez(out, **golden_runs(gb))
    print(f"wrote {out} with gpbayes from {Path(gb.__file__).parent}", file=sys.stderr)
