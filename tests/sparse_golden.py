"""Golden chains of the sparse-GP samplers (Hensman et al. 2015), for restructuring checks.

``python tests/sparse_golden.py OUT.npz`` runs short joint-HMC and Gibbs
chains (warm-up + kept draws) on two small problems -- binary probit and
Poisson with per-bin exposure -- for fixed seeds and saves every array under
``<run>/<name>``; ``tests/data/sparse_golden_*.npz`` were written this way
(see ``tests/data/README.md`` for which tree each was made with).  The
problems are built from numpy draws only (no fitted SVGP), so the file
depends on nothing but ``SparseTarget`` and the samplers.

``RUNS`` and ``problem`` are shared with ``tests/test_sparse.py``, which
reruns the chains and compares them with np.array_equal; ``run``/``flatten``
are the one place that maps a sampler's result to the stored names, so they
are the only part that follows the samplers' API (``sparse_golden_original.npz``
was written by the pre-runner version of this file, commit a431223, from
result dicts; the names are the same).
"""

from __future__ import annotations

import sys

import numpy as np

from gpbayes import kernels, likelihoods, priors

#: (run name, problem, sampler, seed, n_warmup, n_draws, tuning options)
RUNS = [
    ("probit_joint_auto", "probit", "joint", 1, 120, 40, {}),
    ("probit_joint_diag", "probit", "joint", 2, 120, 40, {"metric": "diag"}),
    ("probit_gibbs", "probit", "gibbs", 3, 80, 40, {}),
    ("poisson_joint_auto", "poisson", "joint", 4, 120, 40, {}),
    ("poisson_gibbs", "poisson", "gibbs", 5, 80, 40, {}),
]


def problem(name: str):
    """(SparseTarget, position0) for ``probit`` or ``poisson``: N = 40, M = 6, one input."""
    from gpbayes.sparse.target import SparseTarget

    rng = np.random.default_rng({"probit": 101, "poisson": 102}[name])
    X = rng.uniform(-3.0, 3.0, size=(40, 1))
    Z = np.linspace(-2.5, 2.5, 6)[:, None]
    f = np.sin(1.3 * X[:, 0])
    if name == "probit":
        y = np.where(rng.uniform(size=40) < 0.5 * (1.0 + np.tanh(1.5 * f)), 1.0, -1.0)
        lik = likelihoods.Probit()
    else:
        exposure = rng.uniform(0.5, 2.0, 40)
        y = rng.poisson(exposure * np.exp(f + 0.3)).astype(float)
        lik = likelihoods.Poisson(exposure=exposure)
    kernel = kernels.SquaredExponential(1, parameterisation="ma")
    prior = priors.IndependentPrior((priors.LogNormal(0.0, 0.5), priors.LogNormal(0.0, 0.5)))
    target = SparseTarget(X, y, Z, kernel, lik, prior)
    x0 = np.concatenate([0.3 * rng.standard_normal(6), [0.1, -0.1]])
    return target, x0


def run(name: str, problem_name: str, sampler: str, seed: int, n_warmup: int, n_draws: int, options: dict):
    from gpbayes.sparse import mcmc

    target, x0 = problem(problem_name)
    fn = mcmc.sample_joint if sampler == "joint" else mcmc.sample_gibbs
    warmup = []  # the Info of every warm-up iteration

    def callback(iteration, n_total, state, info):
        if iteration < n_warmup:
            warmup.append(info)

    chain = fn(np.random.default_rng(seed), target, x0, n_warmup=n_warmup, n_draws=n_draws,
               target_accept=0.8, trajectory_length=1.5, max_steps=32, callback=callback, **options)
    return flatten(chain, warmup, sampler)


def flatten(chain, warmup: list, sampler: str) -> dict[str, np.ndarray]:
    """The arrays compared bit for bit, from the ``runner.Chain`` of ``sample_joint``/``sample_gibbs``
    and the Info of its warm-up iterations (names as in the pre-runner result dicts)."""
    st = chain.stats
    res = {"v": chain.extra["v"], "psi": chain.draws, "lp": st["lp"], "n_steps": st["n_leapfrog"],
           "n_cubic": st["n_cubic"], "step_size": np.asarray(chain.params["step_size"]),
           "n_leapfrog": np.asarray(st["n_leapfrog"][0])}
    if sampler == "joint":
        mass = chain.params["mass"]
        res.update(accepted=st["accepted"], acceptance_rate=st["acceptance_rate"], diverging=st["diverging"],
                   inv_mass=mass.inv_diag if mass.inv_chol is None else mass.inv_chol @ mass.inv_chol.T,
                   warmup_acceptance_prob=np.array([i.acceptance_prob for i in warmup]),
                   warmup_n_leapfrog=np.array([i.n_leapfrog for i in warmup]))
        return res
    res.update(v_acceptance_rate=st["acceptance_rate"], psi_acceptance_rate=st["psi_acceptance_prob"],
               psi_proposal_scale=np.asarray(chain.params["psi_proposal_scale"]))
    return res


def make_all() -> dict[str, np.ndarray]:
    arrays = {}
    for spec in RUNS:
        for key, value in run(*spec).items():
            arrays[f"{spec[0]}/{key}"] = value
    return arrays


if __name__ == "__main__":
    np.savez_compressed(sys.argv[1], **make_all())
