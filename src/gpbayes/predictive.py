"""Draws of y and pointwise log-likelihoods for a ``gpbayes.sample`` result (ArviZ groups).

* :func:`sample_posterior_predictive` adds ``posterior_predictive``: one
  replicate y_rep of the observed targets per posterior draw (dims
  ``(chain, draw, obs)``, on the scale of ``observed_data["y"]``).
* :func:`compute_log_likelihood` adds ``log_likelihood`` so that ``az.loo``
  and ``az.waic`` apply.

GP regression does not factorise over observations given the
hyperparameters alone, so its pointwise term is the leave-one-out predictive
log p(y_i | y_-i, theta) (R&W eqs. 5.10-5.12), the non-factorised form of
PSIS-LOO of Buerkner, Gabry & Vehtari (2021, Comput. Stat. 36, eq. 8); its
replicates are joint draws of y_rep ~ p(y_rep | y, theta) (R&W eqs.
2.23-2.24 at the training inputs, plus noise).  Latent-GP models (classifier,
Cox process) factorise given f: log p(y_i | f_i) and y_rep_i ~ p(y | f_i),
which need the latent draws ``f`` in ``posterior`` (``method="aa"`` or
``"surr"`` with ``keep_latent=True``).

Both take O(n^3) operations per distinct posterior draw (repeated draws, as in
a resampled importance sample, are computed once).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from . import linalg

__all__ = ["sample_posterior_predictive", "compute_log_likelihood", "regression_loo"]

_LOG_2PI = float(np.log(2.0 * np.pi))


def regression_loo(gp, psi) -> tuple[np.ndarray, np.ndarray]:
    """Leave-one-out predictive mean and variance of each y_i given y_-i and psi (R&W eqs. 5.10-5.12).

    With C = K + lambda I: mu_i = y_i - [C^-1 y]_i / [C^-1]_ii and
    sigma_i^2 = 1 / [C^-1]_ii.
    """
    _, C = gp._cov(psi)
    L = linalg.cholesky(C, name="K + lambda I", max_tries=1)
    Ci = linalg.cho_inverse(L)
    d = np.diag(Ci).copy()
    return gp.y - (Ci @ gp.y) / d, 1.0 / d


def _draws(idata):
    from .io import psi_draws

    psi = psi_draws(idata).values
    return psi, psi.shape[:2]


def _per_draw(psi: np.ndarray, fn):
    """fn(psi_s) for every (chain, draw), computed once per distinct psi."""
    cache, out = {}, []
    for p in psi.reshape(-1, psi.shape[-1]):
        key = p.tobytes()
        if key not in cache:
            cache[key] = fn(p)
        out.append(cache[key])
    return np.array(out)


def _latent(model, idata, what: str) -> np.ndarray:
    if "f" not in idata.posterior:
        raise ValueError(f"{what} of {type(model).__name__} needs the latent draws f in the posterior: sample with "
                         "method='aa' or 'surr' and keep_latent=True")
    return idata.posterior["f"].values


def _group(values: np.ndarray, shape, n: int) -> xr.Dataset:
    from .io import arviz_attrs

    ds = xr.Dataset({"y": (("chain", "draw", "obs"), values.reshape(*shape, n))},
                    coords={"chain": np.arange(shape[0]), "draw": np.arange(shape[1]), "obs": np.arange(n)})
    ds.attrs.update(arviz_attrs())
    return ds


def _extend(idata, name: str, ds: xr.Dataset, extend: bool):
    if extend:
        if name in idata.groups():
            del idata[name]
        idata.add_groups({name: ds})
        return idata
    return ds


def compute_log_likelihood(model, idata, *, extend: bool = True):
    """Pointwise log-likelihood of the observed y per posterior draw, as the ArviZ group ``log_likelihood``.

    GPRegressor: log p(y_i | y_-i, theta) (R&W eqs. 5.10-5.12; Buerkner et al.
    2021 eq. 8 for non-factorised models), on the original scale of y.
    GPClassifier / PoissonGP: log p(y_i | f_i) at the latent draws ``f``
    (F&G eq. 2 / M&A Sec. 5).  Returns ``idata`` with the group added (or only the
    group, ``extend=False``); then ``az.loo(idata)`` applies.
    """
    from .models import GPRegressor

    psi, shape = _draws(idata)
    if isinstance(model, GPRegressor):
        def loo(p):
            mu, var = regression_loo(model.gp, p)
            return -0.5 * (_LOG_2PI + np.log(var) + (model.gp.y - mu) ** 2 / var)

        values = _per_draw(psi, loo) - np.log(model.y_scale)
    else:
        f = _latent(model, idata, "the log-likelihood")
        values = model.likelihood.log_lik(model.y[None, None, :], f)
    return _extend(idata, "log_likelihood", _group(values, shape, model.n), extend)


def sample_posterior_predictive(model, idata, *, seed: int = 0, extend: bool = True):
    """One replicate of the observed y per posterior draw, as the ArviZ group ``posterior_predictive``.

    GPRegressor: y_rep ~ N(K C^-1 y, C - K C^-1 K) with C = K + lambda I,
    drawn jointly over the training inputs (R&W eqs. 2.23-2.24 plus the
    noise), on the original scale of y.  GPClassifier: y_rep_i in {-1, +1}
    with P(+1) = p(+1 | f_i) (F&G eq. 2) at the latent draws ``f``;
    PoissonGP: y_rep_i ~ Poisson(exposure_i exp(f_i + m)) (M&A Sec. 5).
    Like ``pymc.sample_posterior_predictive`` it returns ``idata`` with the
    group added (or the group alone, ``extend=False``); ``az.plot_ppc`` applies.
    """
    from .models import GPRegressor, PoissonGP

    rng = np.random.default_rng(seed)
    psi, shape = _draws(idata)
    n = model.n
    if isinstance(model, GPRegressor):
        flat = psi.reshape(-1, psi.shape[-1])
        moments = {}
        draws = np.empty((flat.shape[0], n))
        for s, p in enumerate(flat):
            key = p.tobytes()
            if key not in moments:
                K, C = model.gp._cov(p)
                L = linalg.cholesky(C, name="K + lambda I", max_tries=1)
                A = linalg.solve_triangular(L, K, lower=True)
                cov = C - A.T @ A  # cov of f given y, plus lambda I: the covariance of y_rep
                cov = 0.5 * (cov + cov.T)
                moments[key] = (A.T @ linalg.solve_triangular(L, model.gp.y, lower=True),
                                linalg.cholesky(cov, name="cov(y_rep | y)"))
            mean, R = moments[key]
            draws[s] = mean + R @ rng.standard_normal(n)
        if model.mean is not None:  # + H b: model.gp holds y - H b (a mean function, gpbayes.means)
            draws += model.prior_mean_at(model.X)
        values = draws * model.y_scale + model.y_shift
    else:
        f = _latent(model, idata, "posterior predictive draws")
        if isinstance(model, PoissonGP):
            exposure = np.broadcast_to(np.asarray(model.likelihood.exposure, dtype=float), (n,))
            values = rng.poisson(exposure * np.exp(f + model.offset)).astype(np.float64)
        else:  # binary: P(y = +1 | f) from the likelihood itself
            p_pos = np.exp(model.likelihood.log_lik(np.ones(n), f))
            values = np.where(rng.uniform(size=f.shape) < p_pos, 1.0, -1.0)
    return _extend(idata, "posterior_predictive", _group(values, shape, n), extend)


# ---------------------------------------------------------------------------
# y-level outputs of gpbayes.predict around each model's latent predictive
# ---------------------------------------------------------------------------
def _lpd(out: xr.Dataset, lp: np.ndarray) -> xr.Dataset:
    out["log_predictive_density"] = ("point", lp)
    out.attrs["lpd"] = float(np.sum(lp))
    return out


def y_level_gaussian(out: xr.Dataset, means: np.ndarray, variances: np.ndarray, y_new=None) -> xr.Dataset:
    """Moments and log density of a new y under the equally weighted mixture of N(means_s, variances_s).

    ``means`` (S, m) or (S, m, k), ``variances`` broadcastable to it, both on the scale of y.
    y_mean = mean_s m_s; y_variance = mean_s (v_s + m_s^2) - y_mean^2 (law of total variance);
    log p(y_new) = log mean_s N(y_new | m_s, v_s), summed over outputs within a draw.
    """
    from scipy.special import logsumexp

    variances = np.broadcast_to(variances, means.shape)
    dims = ("point",) if means.ndim == 2 else ("point", "output")
    y_mean = means.mean(axis=0)
    out["y_mean"] = (dims, y_mean)
    out["y_variance"] = (dims, np.maximum((variances + means**2).mean(axis=0) - y_mean**2, 0.0))
    if y_new is None:
        return out
    y = np.asarray(y_new, dtype=np.float64)
    y = y.reshape(means.shape[1:]) if y.size == np.prod(means.shape[1:]) else y
    if y.shape != means.shape[1:]:
        raise ValueError(f"y_new must have one target per row of X_new, shape {means.shape[1:]}, got {y.shape}")
    logn = -0.5 * (_LOG_2PI + np.log(variances) + (y[None] - means) ** 2 / variances)
    if logn.ndim == 3:
        logn = logn.sum(axis=2)
    return _lpd(out, logsumexp(logn, axis=0) - np.log(means.shape[0]))


def _encode(classes, y_new) -> np.ndarray:
    """Indices of ``y_new``'s labels in ``classes`` (the labels the model was given)."""
    y = np.asarray(y_new).ravel()
    keys = [str(c) for c in classes]
    idx = np.array([keys.index(str(v)) if str(v) in keys else -1 for v in y.tolist()], dtype=int)
    if np.any(idx < 0):
        raise ValueError(f"y_new has labels {sorted({str(v) for v in y[idx < 0]})} the model was not fitted on; "
                         f"its classes are {list(classes)}")
    return idx


def y_level_classes(out: xr.Dataset, classes, y_new=None) -> xr.Dataset:
    """Class-label outputs: y_mean = P(positive class), y_variance = p (1 - p) (binary); log p(y_new)."""
    p = out["probability"].values
    if p.ndim == 1:
        out["y_mean"] = ("point", p)
        out["y_variance"] = ("point", p * (1.0 - p))
        probs = np.column_stack([1.0 - p, p])
    else:
        probs = p
    if y_new is None:
        return out
    idx = _encode(classes, y_new)
    if idx.size != probs.shape[0]:
        raise ValueError(f"y_new must have one label per row of X_new ({probs.shape[0]}), got {idx.size}")
    with np.errstate(divide="ignore"):
        return _lpd(out, np.log(probs[np.arange(idx.size), idx]))


def y_level_counts(out: xr.Dataset, latent, y_new=None, n_quad: int = 32) -> xr.Dataset:
    """Counts per unit exposure: y | f ~ Poisson(exp(f)), f ~ N(m_s, v_s) at each draw (log-normal moments;
    log p(y_new) by ``n_quad``-point Gauss-Hermite quadrature over f, mixed over draws)."""
    from scipy.special import gammaln, logsumexp

    m = np.array([a for a, _ in latent])
    v = np.array([b for _, b in latent])
    e1, e2 = np.exp(m + 0.5 * v), np.exp(2.0 * m + 2.0 * v)  # E[rate], E[rate^2]
    y_mean = e1.mean(axis=0)
    out["y_mean"] = ("point", y_mean)
    out["y_variance"] = ("point", (e1 + e2).mean(axis=0) - y_mean**2)
    if y_new is None:
        return out
    y = np.asarray(y_new, dtype=np.float64).ravel()
    if y.shape != y_mean.shape or np.any(y < 0) or np.any(y != np.round(y)):
        raise ValueError(f"y_new must be {y_mean.size} non-negative integer counts, got {np.asarray(y_new)!r}")
    t, w = np.polynomial.hermite_e.hermegauss(n_quad)
    f = m[:, :, None] + np.sqrt(v)[:, :, None] * t
    logp = y[None, :, None] * f - np.exp(f) - gammaln(y + 1.0)[None, :, None]
    per_draw = logsumexp(logp + np.log(w / w.sum()), axis=2)
    return _lpd(out, logsumexp(per_draw, axis=0) - np.log(m.shape[0]))
