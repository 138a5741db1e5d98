"""A larger data set: the sparse GP classifier sampled by joint HMC.

Hensman et al. (2015) sample the whitened inducing values v and the
hyperparameters jointly from q*(v, θ); a gradient costs O(N M²), not O(N³). The
model fits the Gaussian (SVGP) approximation first, for the inducing inputs and
the chains' starting points. 400 points, 10 inducing inputs; the figure shows
the predictive probability on a grid.
"""

import matplotlib.pyplot as plt
import numpy as np

import gpbayes as gb
from _common import figure_path

rng = np.random.default_rng(5)
X = rng.uniform(-2, 2, size=(400, 2))
y = np.where(X[:, 0] ** 2 + X[:, 1] ** 2 + 0.3 * rng.normal(size=400) < 1.5, "inside", "outside")

sparse = gb.SparseGPClassifier(X, y, n_inducing=10, seed=0)
idata = gb.sample(sparse, method=gb.JointHMC(max_steps=10), chains=2, draws=20, n_warmup=20, seed=5,
                  progress=False)
print(gb.summary(idata)[["mean", "ess_bulk", "r_hat", "n_cubic_per_draw"]])

g = np.linspace(-2, 2, 30)
G = np.array(np.meshgrid(g, g)).reshape(2, -1).T
p = gb.predict(sparse, idata, G)["probability"].values.reshape(30, 30)
fig, ax = plt.subplots(figsize=(5, 4))
c = ax.contourf(g, g, p, levels=10, cmap="RdBu_r")
fig.colorbar(c, label=f"P(y = {sparse.classes[1]})")
ax.scatter(*X[::4].T, c=(y[::4] == "outside"), s=5, cmap="RdBu_r", edgecolors="k", linewidths=0.6)
ax.set(title="sparse GP, joint HMC")
fig.tight_layout()
fig.savefig(figure_path(__file__), dpi=80)
