"""Regression: NUTS vs AMIS on the exact marginal.

For GP regression p(y | θ) is exact (R&W Alg. 2.1), so gradient-based MCMC
applies; Xiong, Šmídl & Filippone propose adaptive multiple importance sampling
(their Alg. 1) instead, a weighted sample whose cost is fixed in advance. Both
estimate the same posterior: the figure overlays their marginals of each log
hyperparameter (AMIS through its resampled draws).
"""

import matplotlib.pyplot as plt
import numpy as np

import gpbayes as gb
from _common import figure_path

rng = np.random.default_rng(2)
X = rng.uniform(-3, 3, size=(40, 1))
y = np.sin(2 * X[:, 0]) + 0.2 * rng.normal(size=40)

reg = gb.GPRegressor(X, y)
nuts = gb.sample(reg, method="nuts", chains=2, draws=200, warmup=150, seed=2, progress=False)
amis = gb.sample(reg, method="amis", n_iterations=10, n_per_iteration=40, seed=2, progress=False)
print(gb.summary(nuts)[["mean", "sd", "ess_bulk", "r_hat"]])
print(gb.summary(amis)[["mean", "sd", "ess_importance", "n_cubic_total"]])

names = reg.param_names
fig, axes = plt.subplots(1, len(names), figsize=(3.3 * len(names), 3))
for i, (ax, name) in enumerate(zip(axes, names)):
    ax.hist(nuts.posterior["psi"].values[..., i].ravel(), bins=30, density=True, alpha=0.5, label="NUTS")
    ax.hist(amis.posterior_resampled["psi"].values[..., i].ravel(), bins=30, density=True, alpha=0.5,
            label="AMIS")
    ax.set(xlabel=f"log {name}")
axes[0].legend()
fig.tight_layout()
fig.savefig(figure_path(__file__), dpi=80)
