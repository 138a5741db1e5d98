"""Filippone & Girolami (2014): pseudo-marginal MCMC for GP classification.

Experiment-level functions, one per workflow rule (thin scripts call them):

* ``simulate_classification``  data of Secs. 4.1-4.2 (unit hypercube, balanced);
* ``pm_variance_grid``          Fig. 2 -- the PM estimate of p(tau | y) over a
                                tau grid, LA vs EP, several N_imp, repeated;
* ``fig2_band_widths``          the numbers behind claim 1.

Model (F&G eqs. 1-5): y_i in {-1, +1}, p(y_i | f_i) = Phi(y_i f_i),
f ~ N(0, K), K = sigma exp(-1/2 (x - x')^T A (x - x')), A^-1 = tau^2 I (or
diag(tau_i^2)); psi = log(tau, sigma).
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from scipy.special import ndtr

from .. import builders, claims
from gpbayes import linalg, priors
from gpbayes.estimators.grid import log_marginal_estimates_on_grid
from gpbayes.kernels import SquaredExponential
from gpbayes.likelihoods import Probit

__all__ = ["simulate_classification", "pm_variance_grid", "normalised_posterior", "fig2_band_widths",
           "tau_prior", "fig2_data", "fig2_grid", "fig2_summary"]


def simulate_classification(rng: np.random.Generator, n: int, d: int, tau, sigma: float,
                            *, pool_factor: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Data from the GP-probit model with covariates in the unit hypercube.

    F&G Sec. 4.2: "The covariates were generated in the unit hypercube and
    data were selected to have an equal number of input vectors in each
    class."  We draw a pool of ``pool_factor * n`` inputs X ~ U(0,1)^d,
    f ~ N(0, K(X)), y_i ~ Bernoulli(Phi(f_i)) on {-1, +1}, and keep the
    first n/2 of each class (n even).  ``tau`` is a scalar (isotropic) or a
    length-d vector (ARD).
    """
    if n % 2:
        raise ValueError(f"n must be even for balanced classes, got {n}")
    tau = np.atleast_1d(np.asarray(tau, dtype=float))
    ard = tau.size > 1
    if ard and tau.size != d:
        raise ValueError(f"ARD tau needs {d} values, got {tau.size}")
    kernel = SquaredExponential(d, ard=ard, parameterisation="fg")
    psi = np.log(np.concatenate([tau, [sigma]]))
    for _ in range(10):
        m = pool_factor * n
        X = rng.uniform(size=(m, d))
        K = kernel(psi, X)
        L = linalg.cholesky(K, name="simulation K")
        f = L @ rng.standard_normal(m)
        y = np.where(rng.uniform(size=m) < ndtr(f), 1.0, -1.0)  # y ~ Bernoulli(Phi(f))
        pos, neg = np.flatnonzero(y > 0), np.flatnonzero(y < 0)
        if pos.size >= n // 2 and neg.size >= n // 2:
            keep = np.sort(np.concatenate([pos[: n // 2], neg[: n // 2]]))
            return X[keep], y[keep]
        pool_factor *= 2
    raise RuntimeError("could not draw a balanced data set; the simulated classes are too unbalanced")


def pm_variance_grid(X, y, *, sigma: float, tau_grid, approximations, n_imps, n_reps: int,
                     rng: np.random.Generator, ep_mode: str = "parallel",
                     nugget: float = 0.0) -> xr.Dataset:
    """F&G Fig. 2: log p~(y | tau, sigma) for every tau in the grid, approximation, N_imp and repetition.

    The paper's model on the grid: probit likelihood, F&G's isotropic kernel
    (``parameterisation="fg"``, ``nugget``), sigma fixed and psi = log(tau,
    sigma); the estimates are ``gpbayes.estimators.grid.
    log_marginal_estimates_on_grid`` (q built once per tau, ``n_reps``
    independent estimates with N_imp draws each, eq. 25), indexed by ``tau``.
    Also stores the deterministic approximate log marginal of each method.
    """
    X = np.asarray(X, dtype=float)
    kernel = SquaredExponential(X.shape[1], ard=False, parameterisation="fg", nugget=nugget)
    tau_grid = np.asarray(tau_grid, dtype=float)
    psi_grid = np.array([np.log([tau, sigma]) for tau in tau_grid]).reshape(tau_grid.size, 2)
    ds = log_marginal_estimates_on_grid(X, y, kernel, Probit(), psi_grid, approximations=approximations,
                                        n_imps=n_imps, n_reps=n_reps, rng=rng, ep_mode=ep_mode)
    return ds.drop_vars("psi").rename(point="tau").assign_coords(tau=tau_grid)


def normalised_posterior(ds: xr.Dataset, prior: priors.Gamma, reference=("ep", None)) -> xr.DataArray:
    """p~(tau | y) on the grid: p~(y|tau) p(tau) / Z.

    Z is one constant per data set: the trapezoidal integral over the grid
    of the mean estimate of p(y|tau) p(tau) of the reference method (EP with
    the largest N_imp), so every curve of a panel shares the same scale and
    the unbiasedness of the estimator stays visible.  p(tau) is the Gamma
    density on tau itself (the figure's x-axis is tau, not log tau).
    """
    tau = ds["tau"].values
    log_prior_tau = prior.log_density(np.log(tau)) - np.log(tau)  # density on tau
    log_unnorm = ds["log_marginal_estimate"] + xr.DataArray(log_prior_tau, dims="tau", coords={"tau": tau})
    ref = log_unnorm.sel(approximation=reference[0], n_imp=reference[1] or int(ds["n_imp"].max()))
    shift = float(ref.max())
    mean_ref = np.exp(ref - shift).mean("rep").values
    log_Z = shift + np.log(np.trapezoid(mean_ref, tau))
    return np.exp(log_unnorm - log_Z)


def fig2_band_widths(post: xr.DataArray) -> xr.DataArray:
    """Mean over the tau grid of the 95% band width of the estimate, relative to its mean.

    Width(tau) = (q97.5 - q2.5) / mean over repetitions; averaged over tau.
    A relative width makes panels with different posterior scale comparable.
    """
    q = post.quantile([0.025, 0.975], dim="rep")
    width = (q.sel(quantile=0.975) - q.sel(quantile=0.025)) / post.mean("rep")
    return width.mean("tau")


def fig2_ratio_intervals(post: xr.DataArray, rng: np.random.Generator, n_boot: int = 1000,
                         level: float = 0.95) -> xr.Dataset:
    """Bootstrap intervals (over repetitions) of the two band-width ratios of Fig. 2's claims.

    ``ratio_ep_la`` = width(EP) / width(LA) per N_imp and ``ratio_nimp`` = width(max N_imp) /
    width(min N_imp) per approximation.  Each bootstrap replicate resamples the repetitions of every
    cell (the cells are independent runs) and recomputes :func:`fig2_band_widths`; the interval is
    the percentile interval of the ratio.
    """
    vals = post.transpose("approximation", "n_imp", "rep", "tau").values
    n_rep = vals.shape[2]
    boots = np.empty((n_boot,) + vals.shape[:2])
    for b in range(n_boot):
        idx = rng.integers(0, n_rep, size=vals.shape[:2] + (n_rep,))
        x = np.take_along_axis(vals, idx[..., None], axis=2)
        q = np.quantile(x, [0.025, 0.975], axis=2)
        boots[b] = ((q[1] - q[0]) / x.mean(axis=2)).mean(axis=-1)
    coords = {"approximation": post["approximation"].values, "n_imp": post["n_imp"].values}
    bw = xr.DataArray(boots, dims=("boot", "approximation", "n_imp"), coords=coords)
    qs = [(1 - level) / 2, (1 + level) / 2]
    r1 = (bw.sel(approximation="ep") / bw.sel(approximation="laplace")).quantile(qs, dim="boot")
    imps = sorted(int(k) for k in coords["n_imp"])
    r2 = (bw.sel(n_imp=imps[-1]) / bw.sel(n_imp=imps[0])).quantile(qs, dim="boot")
    return xr.Dataset({"ratio_ep_la_lo": r1.isel(quantile=0, drop=True), "ratio_ep_la_hi": r1.isel(quantile=1, drop=True),
                       "ratio_nimp_lo": r2.isel(quantile=0, drop=True), "ratio_nimp_hi": r2.isel(quantile=1, drop=True)})


def tau_prior(spec: dict, d: int) -> priors.Gamma:
    """F&G's Gamma(a, b / sqrt(d)) prior on tau (shape/rate)."""
    return builders.prior(spec, d)


def fig2_data(fig2: dict, n: int, rng: np.random.Generator) -> xr.Dataset:
    """The simulated data set of one Fig. 2 panel row."""
    X, y = simulate_classification(rng, n, fig2["d"], fig2["tau"], fig2["sigma"])
    return xr.Dataset(
        {"X": (("n", "feature"), X), "y": (("n",), y)},
        attrs={"name": f"fg_sim_n{n}_d{fig2['d']}", "task": "classification", "stand_in": 0,
               "source": "simulated from the GP-probit model (F&G Sec. 4.1)",
               "tau": fig2["tau"], "sigma": fig2["sigma"]},
    )


def fig2_grid(data: xr.Dataset, fig2: dict, settings: dict, *, ep_mode: str, nugget: float,
              rng: np.random.Generator) -> xr.Dataset:
    tau_grid = np.linspace(settings["tau_min"], settings["tau_max"], settings["n_tau"])
    with linalg.count_ops() as ops:  # numerical trouble of the grid's estimates, recorded below
        ds = pm_variance_grid(data["X"].values, data["y"].values, sigma=fig2["sigma"], tau_grid=tau_grid,
                              approximations=fig2["approximations"], n_imps=fig2["n_imp"],
                              n_reps=settings["n_reps"], rng=rng, ep_mode=ep_mode, nugget=nugget)
    ds.attrs.update(n=int(data.sizes["n"]), d=int(fig2["d"]), sigma=fig2["sigma"], true_tau=fig2["tau"],
                    **ops.trouble())
    return ds


def fig2_summary(grids: list[xr.Dataset], fig2: dict, seed: int = 0) -> tuple[list[xr.DataArray], xr.Dataset]:
    """Normalised posteriors per data set and the band-width table with the claims' bootstrap intervals."""
    from gpbayes import rng as rngmod

    posts, rows = [], []
    for ds in grids:
        post = normalised_posterior(ds, tau_prior(fig2["tau_prior"], ds.attrs["d"]))
        post.attrs.update(n=int(ds.attrs["n"]), d=int(ds.attrs["d"]))
        posts.append(post)
        iv = fig2_ratio_intervals(post, rngmod.stream(seed, "pm_gpc", "fig2", "bootstrap", int(ds.attrs["n"])))
        rows.append(iv.assign(relative_band_width=fig2_band_widths(post)).expand_dims(n=[ds.attrs["n"]]))
    return posts, xr.concat(rows, dim="n")


def fig2_claims(widths: xr.Dataset) -> list[dict]:
    """Claim 1: EP's band narrower than LA's; N_imp=64 narrower than N_imp=1 -- in every panel.

    Decided on the bootstrap intervals of the width ratios (:func:`fig2_ratio_intervals`, over the
    repetitions of each panel): PASS when every panel's interval lies below 1, FAIL when some
    panel's lies above 1, INCONCLUSIVE otherwise.
    """
    w = widths["relative_band_width"]
    imps = [int(v) for v in w["n_imp"].values]
    lo, hi = min(imps), max(imps)
    measured = {f"n{int(n)}_{a}_Nimp{int(k)}": float(w.sel(n=n, approximation=a, n_imp=k))
                for n in w["n"].values for a in w["approximation"].values for k in w["n_imp"].values}
    out = []
    for cid, name, other, statement in (
            ("fig2-ep-narrower", "ratio_ep_la", "n_imp",
             "Fig. 2: EP's 95% band of the PM estimate is narrower than LA's (relative band width averaged "
             "over the tau grid; every n and N_imp)"),
            ("fig2-nimp-narrower", "ratio_nimp", "approximation",
             f"Fig. 2: N_imp={hi} gives a narrower 95% band than N_imp={lo} (every n and approximation)")):
        if cid == "fig2-ep-narrower":
            point = w.sel(approximation="ep") / w.sel(approximation="laplace")
        else:
            point = w.sel(n_imp=hi) / w.sel(n_imp=lo)
        lo_, hi_ = widths[f"{name}_lo"], widths[f"{name}_hi"]
        verdicts = [claims.decide(float(a), float(b), 1.0, "below") for a, b in zip(lo_.values.ravel(), hi_.values.ravel())]
        verdict = "FAIL" if "FAIL" in verdicts else "PASS" if set(verdicts) == {"PASS"} else "INCONCLUSIVE"
        worst = int(np.argmax(hi_.values.ravel()))
        rec = {"id": cid, "paper": None, "statement": statement, "verdict": verdict,
               "measured": {**measured, **{f"{name}_n{int(n)}_{other}{v}": [float(point.sel(n=n, **{other: v})),
                                                                           float(lo_.sel(n=n, **{other: v})),
                                                                           float(hi_.sel(n=n, **{other: v}))]
                                          for n in w["n"].values for v in w[other].values}},
               "interval": {"quantity": f"{name} (panel with the largest upper end)",
                            "estimate": float(point.values.ravel()[worst]), "lo": float(lo_.values.ravel()[worst]),
                            "hi": float(hi_.values.ravel()[worst]), "threshold": 1.0, "side": "below",
                            "method": "percentile bootstrap over repetitions, 95%, per panel; PASS needs every panel"}}
        if verdict == "INCONCLUSIVE":
            rec["reason"] = "some panel's 95% interval contains 1 (the band widths are not distinguishable there)"
        out.append(rec)
    return out
