"""Binary classification: pseudo-marginal MH with Laplace vs EP importance densities.

Filippone & Girolami (2014) replace p(y | θ) inside Metropolis–Hastings by an
unbiased importance-sampling estimate (their eq. 25); the chain still targets the
exact posterior. The importance density is a Gaussian approximation of
p(f | y, θ): Laplace or EP. EP's estimate has the smaller variance (their Fig. 2),
so its chain sticks less. Each method is an object whose fields are its options
(``gb.PseudoMarginal(approximation="ep", n_imp=8)``); the result's ``posterior``
holds each hyperparameter on its natural scale. The figure: traces of σ and the
posterior predictive probability along one input.
"""

import matplotlib.pyplot as plt
import numpy as np

import gpbayes as gb
from _common import figure_path

rng = np.random.default_rng(0)
X = rng.uniform(-3, 3, size=(60, 1))
y = np.sin(1.5 * X[:, 0]) + 0.3 * rng.normal(size=60) > 0

model = gb.GPClassifier(X, y)
runs = {a: gb.sample(model, method=gb.PseudoMarginal(approximation=a, n_imp=8), chains=2, draws=150,
                     n_warmup=100, seed=1, progress=False) for a in ("laplace", "ep")}

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.5))
for a, idata in runs.items():
    print(a, gb.summary(idata)[["mean", "ess_bulk", "r_hat", "n_cubic_per_draw"]], sep="\n")
    ax1.plot(idata.posterior["signal_variance"].sel(chain=0), label=f"PM-{a.upper()}", lw=0.8)
grid = np.linspace(-3, 3, 100)[:, None]
ax2.plot(grid[:, 0], gb.predict(model, runs["ep"], grid)["probability"].values, label="P(y = True), PM-EP")
ax2.plot(X[:, 0], y, "k|", label="data")
ax1.set(xlabel="draw (chain 1)", ylabel="signal_variance (F&G's σ)", yscale="log", title="trace")
ax2.set(xlabel="x", title="posterior predictive")
ax1.legend(), ax2.legend()
fig.tight_layout()
fig.savefig(figure_path(__file__), dpi=80)
