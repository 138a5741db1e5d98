"""A log-Gaussian Cox process: surrogate-data slice sampling.

Murray & Adams (2010) slice-sample the hyperparameters (their Alg. 4) with the
latent values moving with them; ``"slice-surr-site"`` is their surrogate-data
representation with the site-fitted noise of eq. 12 (the alias of
``gb.SliceSampler(representation="surr-site")``). Counts in 60 bins of a
rate exp(1 + sin t); the figure shows the data and the posterior mean rate.
"""

import matplotlib.pyplot as plt
import numpy as np

import gpbayes as gb
from _common import figure_path

rng = np.random.default_rng(3)
t = np.linspace(0.0, 10.0, 60)[:, None]
counts = rng.poisson(np.exp(1.0 + np.sin(t[:, 0])))

cox = gb.PoissonGP(t, counts, exposure=1.0)
idata = gb.sample(cox, method=gb.SliceSampler(representation="surr-site"), chains=2, draws=100, n_warmup=50,
                  seed=4, progress=False)
print(gb.summary(idata)[["mean", "ess_bulk", "r_hat", "n_cubic_per_draw"]])
rate = gb.predict(cox, idata, t)["rate"].values

fig, ax = plt.subplots(figsize=(7, 3))
ax.bar(t[:, 0], counts, width=0.15, color="0.7", label="counts")
ax.plot(t[:, 0], np.exp(1.0 + np.sin(t[:, 0])), "k--", label="true rate")
ax.plot(t[:, 0], rate, label="posterior mean rate (surr-site)")
ax.set(xlabel="t")
ax.legend()
fig.tight_layout()
fig.savefig(figure_path(__file__), dpi=80)
