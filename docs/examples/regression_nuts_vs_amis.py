"""Regression: NUTS vs AMIS on the exact marginal.

For GP regression p(y | θ) is exact (R&W Alg. 2.1), so gradient-based MCMC
applies; Xiong, Šmídl & Filippone propose adaptive multiple importance sampling
(their Alg. 1) instead, a weighted sample whose cost is fixed in advance. Both
estimate the same posterior: the figure overlays their marginals of each
hyperparameter. Both results hold one variable per hyperparameter on its natural
scale in ``posterior`` (AMIS: draws resampled in proportion to the weights, so
``az.summary`` is right as it stands; the weighted sample is in ``sample_stats``).
The held-out log predictive density compares the two as predictors.
"""

import arviz as az
import matplotlib.pyplot as plt
import numpy as np

import gpbayes as gb
from _common import figure_path

rng = np.random.default_rng(2)
X = rng.uniform(-3, 3, size=(40, 1))
y = np.sin(2 * X[:, 0]) + 0.2 * rng.normal(size=40)
X_test = rng.uniform(-3, 3, size=(20, 1))
y_test = np.sin(2 * X_test[:, 0]) + 0.2 * rng.normal(size=20)

reg = gb.GPRegressor(X, y)
nuts = gb.sample(reg, method=gb.NUTS(target_accept=0.8), chains=2, draws=200, n_warmup=150, seed=2,
                 progress=False)
amis = gb.sample(reg, method=gb.AMIS(n_iterations=10, n_per_iteration=40), seed=2, progress=False)
print(az.summary(nuts)[["mean", "sd", "ess_bulk", "r_hat"]])      # X's, y's units: lengthscale[0], signal_variance, noise_variance
print(gb.summary(amis, kind="stats")[["mean", "sd", "ess_importance", "n_cubic_total"]])  # one weighted "chain"
for label, idata in (("NUTS", nuts), ("AMIS", amis)):
    lpd = gb.predict(reg, idata, X_test, y_new=y_test).attrs["lpd"]
    print(f"{label}: held-out log predictive density {lpd:.2f}")

names = list(nuts.posterior.data_vars)
fig, axes = plt.subplots(1, len(names), figsize=(3.3 * len(names), 3))
for ax, name in zip(axes, names):
    bins = np.geomspace(float(nuts.posterior[name].min()), float(nuts.posterior[name].max()), 30)
    ax.hist(nuts.posterior[name].values.ravel(), bins=bins, density=True, alpha=0.5, label="NUTS")
    ax.hist(amis.posterior[name].values.ravel(), bins=bins, density=True, alpha=0.5, label="AMIS")
    ax.set(xlabel=name, xscale="log")
    ax.tick_params(axis="x", which="minor", labelsize=6)
axes[0].legend()
fig.tight_layout()
fig.savefig(figure_path(__file__), dpi=80)
