"""The supervised GPLVM: pseudo-marginal MH within Gibbs.

Gadd et al. map an input x to several outputs through a latent z and sample the
hyperparameters by pseudo-marginal MH within Gibbs (their Algs. 2–3), the marginal
likelihood estimated by importance sampling from the variational q(Z) (eq. 6).
The model fits the variational type-II ML first; the chains start there. The
figure: the data of two outputs and the posterior predictive mean ± 2 sd.
"""

import matplotlib.pyplot as plt
import numpy as np

import gpbayes as gb
from _common import figure_path

rng = np.random.default_rng(6)
x = np.linspace(0.0, 4 * np.pi, 30)
Y = np.column_stack([np.cos(x), np.sin(x)]) + 0.05 * rng.standard_normal((30, 2))

gplvm = gb.GPLVMRegressor(x, Y, latent_dim=2, n_inducing=8, ml_restarts=1, ml_max_iter=100)
idata = gb.sample(gplvm, method=gb.GPLVMPseudoMarginal(n_imp=4, vb_max_iter=5), chains=2, draws=10, n_warmup=5,
                  seed=6, progress=False)
print(gb.summary(idata)[["mean", "sd", "n_cubic_per_draw"]])
xs = np.linspace(0.0, 4 * np.pi, 40)
pred = gb.predict(gplvm, idata, xs, max_draws=20)

fig, ax = plt.subplots(figsize=(7, 3))
for j in range(2):
    m, s = pred["mean"].values[:, j], pred["sd"].values[:, j]
    ax.plot(x, Y[:, j], "o", ms=3, color=f"C{j}")
    ax.plot(xs, m, color=f"C{j}", label=f"output {j + 1}")
    ax.fill_between(xs, m - 2 * s, m + 2 * s, color=f"C{j}", alpha=0.2)
ax.set(xlabel="x")
ax.legend()
fig.tight_layout()
fig.savefig(figure_path(__file__), dpi=80)
