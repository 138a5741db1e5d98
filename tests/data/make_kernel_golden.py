"""Run with one BLAS thread (OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=1), as the workflow does.
Golden arrays for the kernel protocol, made with the code before it (commit 81aef2f):
default initial values of regression and classification, the SE cross-covariance VJP and
the whitened-conditional backward pass of the sparse GP, per parameterisation."""
import sys

import numpy as np

from gpbayes import classification, regression
from gpbayes.kernels import SquaredExponential
from gpbayes.sparse import svgp

out = {}
rng = np.random.default_rng(0)
X = rng.normal(size=(40, 3))
y = rng.normal(size=40)
Z = rng.normal(size=(6, 3))
for par in ("fg", "amis", "ma", "gplvm"):
    for ard in (False, True):
        for fixed in (False, True):
            k = SquaredExponential(3, ard=ard, parameterisation=par, fixed_amplitude=fixed, nugget=1e-6)
            tag = f"{par}_{int(ard)}_{int(fixed)}"
            out[f"{tag}/reg_init"] = regression.default_init(regression.GPRegression(X, y, k))
            out[f"{tag}/cls_init"] = classification.default_init(X, k)
            psi = rng.normal(scale=0.3, size=k.n_params)
            K12 = k(psi, Z, X)
            K_bar = rng.normal(size=K12.shape)
            g, dX = svgp.se_cross_gradients(k, psi, Z, X, K12, K_bar, True)
            out[f"{tag}/cross_g"], out[f"{tag}/cross_dX"] = g, dX
            cond = svgp.whitened_conditional(k, psi, Z, X, 1e-6)
            W_bar = rng.normal(size=cond.W.shape)
            knn_bar = rng.normal(size=X.shape[0])
            gb, dZ = svgp.whitened_conditional_backward(k, psi, Z, X, cond, W_bar, knn_bar, inputs=True)
            out[f"{tag}/back_g"], out[f"{tag}/back_dZ"] = gb, dZ
np.savez_compressed(sys.argv[1], **out)
print(len(out), "arrays")
