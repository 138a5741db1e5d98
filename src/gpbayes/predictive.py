"""Draws of y and pointwise log-likelihoods for a ``gpbayes.sample`` result (ArviZ groups).

* :func:`sample_posterior_predictive` adds ``posterior_predictive``: one
  replicate y_rep of the observed targets per posterior draw (dims
  ``(chain, draw, obs)``, on the scale of ``observed_data["y"]``).
  With ``X_new``, draws of y at new inputs instead (dims ``(chain, draw, point)``,
  ``point`` as in ``gpbayes.predict``): f_* from the GP conditional given the
  data (regression: given y and theta, R&W eqs. 2.22-2.24) or given the kept
  latent f (latent-GP models: R&W eq. 2.19's conditional with the noise-free
  K), then y_* from the likelihood (``Likelihood.sample_targets``).
* :func:`compute_log_likelihood` adds ``log_likelihood`` so that ``az.loo``
  and ``az.waic`` apply.
* :func:`latent_gp_predict` is ``gpbayes.predict`` for a ``LatentGP``.

GP regression does not factorise over observations given the
hyperparameters alone, so its pointwise term is the leave-one-out predictive
log p(y_i | y_-i, theta) (R&W eqs. 5.10-5.12), the non-factorised form of
PSIS-LOO of Buerkner, Gabry & Vehtari (2021, Comput. Stat. 36, eq. 8); its
replicates are joint draws of y_rep ~ p(y_rep | y, theta) (R&W eqs.
2.23-2.24 at the training inputs, plus noise).  Latent-GP models (classifier,
Cox process) factorise given f: log p(y_i | f_i) and y_rep_i ~ p(y | f_i),
which need the latent draws ``f`` in ``posterior``: method ``"nuts-whitened"``
keeps them, ``"slice-<rep>"``, ``"aa"`` and ``"surr"`` with ``keep_latent=True``,
and ``gb.sample(model, log_likelihood=True)`` with no method picks one that
does; ``"pseudo-marginal"``, ``"nuts-is"``, ``"pm-amis"`` and ``"ep-ml"`` do not.
A ``LatentGP`` result always holds f.  ``SparseGP`` / ``SparseGPClassifier`` (Hensman et al.
2015) keep the whitened inducing values v instead: its draws of y come from
f_* ~ p(f_* | u = L v, theta) jointly at the inputs, then the likelihood.
``GPLVMRegressor`` (Gadd et al.) keeps the latent Z per draw: its draws at new
inputs come from the eq. 7 mixture (one component per posterior draw), its
replicates from the GP of y given Z at the training inputs.  Neither has a
pointwise log-likelihood here.

Both take O(n^3) operations per distinct posterior draw (repeated draws, as in
a resampled importance sample, are computed once).
"""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr

from . import linalg

__all__ = ["sample_posterior_predictive", "compute_log_likelihood", "regression_loo", "latent_gp_predict"]

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


#: the methods that keep the latent f per draw, as an error message names them
_KEEPS_F = ("method 'nuts-whitened', or 'slice-<representation>' (e.g. 'slice-surr-site'), 'aa' or 'surr' with "
            "keep_latent=True, or gb.sample(model, log_likelihood=True) with no method (its default then keeps f); "
            "'pseudo-marginal', 'nuts-is', 'pm-amis' and 'ep-ml' keep none")


def _posterior(idata) -> xr.Dataset:
    from .io import group

    return group(idata, "posterior")


def _latent(model, idata, what: str) -> np.ndarray:
    if "f" not in _posterior(idata):
        raise ValueError(f"{what} of {type(model).__name__} needs the latent draws f in the posterior: sample with "
                         f"{_KEEPS_F}")
    return _posterior(idata)["f"].values


def _offset(model, psi: np.ndarray) -> np.ndarray | float:
    """m per draw, broadcast against f (..., n): a LatentGP's sampled constant (``sample_offset``, M&A
    Sec. 5; psi's last coordinate), 0 for every other model and a LatentGP without it."""
    if not getattr(model, "sample_offset", False):
        return 0.0
    return np.asarray(model.latent_offset(psi))[..., None]


def _is_sparse(model) -> bool:
    """Whether ``model`` is a sparse GP of Hensman et al. (2015) -- posterior draws (v, psi), no f;
    ``model.target`` (a ``gpbayes.sparse.target.SparseTarget``: kernel, Z, jitter) and
    ``model.likelihood`` (``sample_targets``) are all its draws of y use.  The one place that names
    the sparse model class."""
    from .models import SparseGP

    return isinstance(model, SparseGP)


def _group(values: np.ndarray, shape, n: int, dim: str = "obs", n_out: int | None = None,
           attrs: dict | None = None) -> xr.Dataset:
    """y over ``(chain, draw, dim)``, or ``(chain, draw, dim, output)`` with ``n_out`` outputs."""
    from .io import arviz_attrs

    dims, coords = ("chain", "draw", dim), {"chain": np.arange(shape[0]), "draw": np.arange(shape[1]),
                                             dim: np.arange(n)}
    if n_out is None:
        values = values.reshape(*shape, n)
    else:
        values, dims = values.reshape(*shape, n, n_out), dims + ("output",)
        coords["output"] = np.arange(n_out)
    ds = xr.Dataset({"y": (dims, values)}, coords=coords)
    ds.attrs.update(arviz_attrs())
    ds.attrs.update(attrs or {})
    return ds


def _extend(idata, name: str, ds: xr.Dataset, extend: bool):
    if extend:
        from .io import set_group

        set_group(idata, name, ds)  # InferenceData (ArviZ 0.x) or DataTree (1.x)
        return idata
    return ds


def compute_log_likelihood(model, idata=None, *, extend: bool = True):
    """Pointwise log-likelihood of the observed y per posterior draw, as the ArviZ group ``log_likelihood``.

    GPRegressor: log p(y_i | y_-i, theta) (R&W eqs. 5.10-5.12; Buerkner et al.
    2021 eq. 8 for non-factorised models), on the original scale of y.
    GPClassifier / PoissonGP / LatentGP: log p(y_i | f_i) at the latent draws ``f``
    (F&G eq. 2 / M&A Sec. 5; a LatentGP with ``sample_offset`` at f_i + m, m the draw's constant).
    Returns ``idata`` with the group added (or only the group, ``extend=False``); then
    ``az.loo(idata)`` applies.  ``compute_log_likelihood(idata)`` rebuilds the model from the result
    (``gpbayes.model_spec``); a model given must be the one the result was sampled from.
    """
    from .io import check_names
    from .model_spec import resolve
    from .models import GPRegressor

    model, idata, _ = resolve(model, idata, None, "gb.compute_log_likelihood", needs_x=False)
    check_names(model, idata, "gb.compute_log_likelihood")
    psi, shape = _draws(idata)
    if isinstance(model, GPRegressor):
        def loo(p):
            mu, var = regression_loo(model.gp, p)
            return -0.5 * (_LOG_2PI + np.log(var) + (model.gp.y - mu) ** 2 / var)

        values = _per_draw(psi, loo) - np.log(model.y_scale)
    else:
        f = _latent(model, idata, "the log-likelihood") + _offset(model, psi)
        values = model.likelihood.log_lik(model.y[None, None, :], f)
    return _extend(idata, "log_likelihood", _group(values, shape, model.n), extend)


def sample_posterior_predictive(model, idata=None, *, X_new=None, seed: int = 0, extend: bool = True,
                                predictions: bool = False):
    """Draws of y per posterior draw, as the ArviZ group ``posterior_predictive``: replicates of the
    observed y, or with ``X_new`` draws of y at new inputs.

    Observed inputs (``X_new`` None), dims ``(chain, draw, obs)``: GPRegressor:
    y_rep ~ N(K C^-1 y, C - K C^-1 K) with C = K + lambda I, drawn jointly over the training inputs
    (R&W eqs. 2.23-2.24 plus the noise), on the original scale of y.  GPClassifier: y_rep_i in
    {-1, +1} with P(+1) = p(+1 | f_i) (F&G eq. 2) at the latent draws ``f``; PoissonGP:
    y_rep_i ~ Poisson(exposure_i exp(f_i + m)) (M&A Sec. 5); LatentGP: y_rep_i from its
    likelihood's ``sample_targets`` at f_i (at f_i + m, the draw's constant, with ``sample_offset``).

    New inputs (``X_new``, m rows on the scale the model was given), dims ``(chain, draw, point)``
    (``point`` as in ``gpbayes.predict``), per posterior draw jointly over the m points:

    * GPRegressor: f_* ~ N(K_*^T C^-1 y, K_** - K_*^T C^-1 K_*) given y and theta (R&W eqs.
      2.22-2.24), then y_* = f_* + e, e ~ N(0, lambda), on the original scale of y;
    * GPClassifier, PoissonGP, LatentGP: f_* ~ N(K_*^T K^-1 f, K_** - K_*^T K^-1 K_*) given the kept
      latent f and theta (the GP conditional, R&W eq. 2.19 with K in place of K + sigma^2 I; K and
      K_** with the model's nugget), then y_* from the likelihood: labels in {-1, +1} from
      p(+1 | f_*) (GPClassifier), counts with unit exposure, i.e. rates per unit exposure as in
      ``gpbayes.predict`` (PoissonGP), ``likelihood.sample_targets`` at f_* + m (LatentGP; m the draw's
      sampled constant with ``sample_offset``, else 0).  The latent
      models need ``f`` in the posterior (a method that keeps it; the error names them).

    SparseGP and SparseGPClassifier (Hensman et al. 2015; its draws hold the whitened inducing values v (M, C)
    and psi, no f), at the training inputs (``obs``) or at X_new (``point``) alike: per draw s,
    f_* ~ N(K_*u K_uu^-1 u_s, K_** - K_*u K_uu^-1 K_u*) with u_s = L v_s, L L^T = K_uu + jitter
    (the model's conditional p(f_* | u, theta_s), jointly over the inputs, each of the C latent
    functions; ``gpbayes.sparse.target.sample_latent_draws``), then y_* from
    ``model.likelihood.sample_targets``: labels in {-1, +1} from p(+1 | f_*) (probit; -1 is
    ``model.classes[0]``, +1 ``model.classes[1]``, as GPClassifier's draws and ``observed_data``),
    or robust-max classes 0..K-1 (indices into ``model.classes``; the group's ``attrs["classes"]``
    lists them): argmax_c f_*c with probability 1 - epsilon, otherwise one of the other K - 1
    uniformly (``RobustMax.sample_targets``).  O(M^3 + m M^2 + m^3) per distinct psi for m inputs:
    the joint draw factorises an m x m covariance -- the replicates an n x n one, the dense cost the
    sparse model avoids elsewhere (a MemoryError names the way out when it cannot fit).

    GPLVMRegressor (Gadd et al.), dims ``(..., output)``, on the original scale of Y (y_shift +
    y_scale y; its ``observed_data`` holds the standardised Y):

    * at X_new, one component of the eq. 7 mixture per posterior draw (psi_s, Z_s), as
      ``gpbayes.predict`` builds it (``gplvm.pseudo_marginal.predictive_mixture``): z_* from eq. 8 at
      each point, then y_* ~ N(A y_:,i, S + beta^-1) for each output i.  Eq. 7 is the predictive of
      one test input, so the points are drawn independently given the draw (psi_s, Z_s) (unlike
      GPRegressor's joint draws); the outputs are independent given z_*, sharing the variance;
    * at the training inputs, the replicate of Y given the draw: z at x_i is the draw's z_i (eq. 8
      at a training input, s_* = 0), and y_rep_:,i ~ N(K_f C^-1 y_:,i, C - K_f C^-1 K_f) jointly over
      the n points for each output i, C = K_f(Z_s) + beta^-1 I (eq. 1's GP given Z, as GPRegressor's
      replicates; each point's marginal is the eq. 7 component at x_i);
    * a result without Z (``"type2-ml"``, the type-II ML point estimate): Z_s ~ q(Z), the fit's
      variational posterior (``GPLVMRegressor.ml_fit``) at the draw's psi, one Z per draw, as
      ``gpbayes.predict``'s ``ml_predictive_mixture``.

    O(n^3) per draw for the GPLVM (Cholesky factors of K_z, K_f + beta^-1 I and, for the
    replicates, of the n x n covariance).

    ``predictions=True`` (with ``X_new``) writes ArviZ's out-of-sample groups instead:
    ``predictions`` (the draws) and ``predictions_constant_data`` (X_new over ``(point, feature)``,
    standardised as the model's X).  Like ``pymc.sample_posterior_predictive`` it returns ``idata``
    with the group added (replacing one of the same name), or the group alone (``extend=False``).
    O(n^3 + m^3) operations per distinct posterior draw for the dense models.

    ``sample_posterior_predictive(idata, X_new=...)`` (or ``(idata, X_new)``) rebuilds the model from
    the result, which carries it (``gpbayes.model_spec``); a model given must be the one the result
    was sampled from (a ValueError names what differs).  A DataFrame ``X_new`` is matched by column
    name, as in ``gpbayes.predict``.
    """
    from .model_spec import resolve
    from .models import GPLVMRegressor, GPRegressor, LatentGP, PoissonGP

    model, idata, X_new = resolve(model, idata, X_new, "gb.sample_posterior_predictive", needs_x=False)
    if predictions and X_new is None:
        raise ValueError("predictions=True writes the out-of-sample groups: give X_new")
    rng = np.random.default_rng(seed)
    from .io import check_names

    check_names(model, idata, "gb.sample_posterior_predictive")
    psi, shape = _draws(idata)
    if X_new is not None:
        Xs = model.transform(X_new)
        values = _new_input_draws(model, idata, psi, Xs, rng)
        ds = _group(values, shape, Xs.shape[0], dim="point", n_out=_n_out(model), attrs=_label_attrs(model))
        if not predictions:
            return _extend(idata, "posterior_predictive", ds, extend)
        from .io import arviz_attrs

        feature = getattr(model, "feature_names", None) or list(range(Xs.shape[1]))
        const = xr.Dataset({"X": (("point", "feature"), Xs)}, coords={"point": np.arange(Xs.shape[0]),
                                                                        "feature": feature})
        const.attrs.update(arviz_attrs())
        if not extend:
            return {"predictions": ds, "predictions_constant_data": const}
        _extend(idata, "predictions", ds, True)
        return _extend(idata, "predictions_constant_data", const, True)
    n = model.n
    if _is_sparse(model):
        values = _sparse_draws(model, idata, psi, model.target.X, rng)
        return _extend(idata, "posterior_predictive", _group(values, shape, n, attrs=_label_attrs(model)), extend)
    if isinstance(model, GPLVMRegressor):
        values = _gplvm_replicates(model, idata, psi, rng)
        return _extend(idata, "posterior_predictive", _group(values, shape, n, n_out=_n_out(model)), extend)
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
        elif isinstance(model, LatentGP):  # f + m: the sampled constant of sample_offset (M&A Sec. 5), else 0
            values = np.asarray(model.likelihood.sample_targets(rng, f + _offset(model, psi)), dtype=np.float64)
        else:  # binary: P(y = +1 | f) from the likelihood itself
            p_pos = np.exp(model.likelihood.log_lik(np.ones(n), f))
            values = np.where(rng.uniform(size=f.shape) < p_pos, 1.0, -1.0)
    return _extend(idata, "posterior_predictive", _group(values, shape, n), extend)


def _gp_conditional_draw(rng, L, Ks, Kss, target, extra_var: float, name: str) -> np.ndarray:
    """One joint draw of f_* ~ N(A^T L^-1 t, K_** - A^T A), A = L^-1 K_*, plus N(0, extra_var I).

    ``L`` the Cholesky factor of the training covariance (K + lambda I for regression, R&W eq.
    2.22-2.24; K for a latent GP given f); the predictive covariance is factorised with
    ``linalg.cholesky``'s jitter retries (it is singular where X_new repeats a training input of
    a latent GP: f_* is then f there)."""
    A = linalg.solve_triangular(L, Ks, lower=True)
    mean = A.T @ linalg.solve_triangular(L, target, lower=True)  # R&W eq. 2.23
    cov = Kss - A.T @ A  # R&W eq. 2.24
    cov = 0.5 * (cov + cov.T)
    m = Ks.shape[1]
    R = linalg.cholesky(cov, name=name)
    out = mean + R @ rng.standard_normal(m)
    if extra_var > 0.0:
        out = out + np.sqrt(extra_var) * rng.standard_normal(m)
    return out


def _n_out(model) -> int | None:
    """The number of outputs of a multi-output model (GPLVMRegressor's columns of Y), else None."""
    from .models import GPLVMRegressor

    return int(model.y.shape[1]) if isinstance(model, GPLVMRegressor) else None


def _label_attrs(model) -> dict:
    """A sparse classifier's labels, for its draws' coding (-1/+1 or 0..K-1 in the order of ``classes``)."""
    classes = getattr(model, "classes", None) if _is_sparse(model) else None
    return {} if classes is None else {"classes": [str(c) for c in classes]}


def _sparse_draws(model, idata, psi, Xs, rng) -> np.ndarray:
    """y_* at the standardised inputs ``Xs`` per posterior draw (v_s, psi_s) of a sparse GP (Hensman et al.
    2015), flattened over (chain, draw): f_* jointly from p(f_* | u = L v_s, theta_s) (C1 of
    ``gpbayes.sparse.svgp``, ``sample_latent_draws``), then ``model.likelihood.sample_targets``
    (at f_* (S, m) for one latent function, at (S, m, C) for C of them, e.g. robust-max)."""
    from .models import _check_dense_size
    from .sparse.target import sample_latent_draws

    # the joint draw factorises an m x m covariance: the dense cost the sparse model avoids elsewhere
    _check_dense_size(Xs.shape[0], f"joint posterior predictive draws of {type(model).__name__} at {Xs.shape[0]} "
                      "inputs", "give X_new in batches of fewer rows (draws at separate calls are independent "
                      "given each posterior draw), or use gb.predict for the per-point class probabilities")
    if "v" not in _posterior(idata):
        raise ValueError(f"posterior predictive draws of {type(model).__name__} need the whitened inducing values v "
                         "in the posterior (dims chain, draw, inducing, latent_gp): sample with method 'joint-hmc' "
                         "or 'gibbs'")
    target = model.target
    v = _posterior(idata)["v"].values
    flat = psi.reshape(-1, psi.shape[-1])
    f = sample_latent_draws(rng, target, v.reshape(flat.shape[0], *v.shape[2:]), flat, Xs)  # (S, m, C)
    f = f if target.n_latent > 1 else f[:, :, 0]
    if target.sample_noise:  # the Gaussian noise is a hyperparameter: y*_s = f*_s + N(0, exp(psi_s[-1]))
        from .sparse.target import draw_likelihoods

        return np.stack([np.asarray(lik.sample_targets(rng, fs), dtype=np.float64)
                         for lik, fs in zip(draw_likelihoods(target, flat), f)])
    return np.asarray(model.likelihood.sample_targets(rng, f), dtype=np.float64)


def _gplvm_latent_draws(model, idata, psi, rng) -> np.ndarray:
    """Z per posterior draw (S, n, k_z): the kept Z, or for a result without it (the type-II ML point
    estimate) Z_s ~ q(Z), the ML fit's variational posterior at psi_s (``gplvm.vb.latent_posterior``)."""
    from .gplvm import pseudo_marginal as gpm
    from .gplvm.vb import latent_posterior

    gplvm = model.gplvm
    if "Z" in _posterior(idata):
        return _posterior(idata)["Z"].values.reshape(psi.shape[0], gplvm.n, gplvm.latent_dim)
    out, key, q = np.empty((psi.shape[0], gplvm.n, gplvm.latent_dim)), None, None
    for s, p in enumerate(psi):
        if p.tobytes() != key:
            key, q = p.tobytes(), latent_posterior(gplvm, p, model.ml_fit.params)
        out[s] = gpm.sample_latent(rng, q, 1)[0]
    return out


def _gplvm_new_input_draws(model, idata, psi, Xs, rng) -> np.ndarray:
    """y_* (S, m, k_y) at the standardised new inputs ``Xs``: per posterior draw one component of Gadd et
    al.'s eq. 7 mixture (z_* from eq. 8 per point, ``predictive_mixture``), then y_* ~ N(mean, S + beta^-1)
    per point and output, on the original scale of Y."""
    from .gplvm import pseudo_marginal as gpm

    flat = psi.reshape(-1, psi.shape[-1])
    Z = _gplvm_latent_draws(model, idata, flat, rng)
    mix = gpm.predictive_mixture(rng, model.gplvm, flat, Z, Xs)  # mean (S, m, k_y), var (S, m)
    y = mix.mean + np.sqrt(mix.var)[:, :, None] * rng.standard_normal(mix.mean.shape)
    return y * model.y_scale + model.y_shift


def _gplvm_replicates(model, idata, psi, rng) -> np.ndarray:
    """Replicates of Y (S, n, k_y) at the training inputs given each draw (psi_s, Z_s): for each output
    y_rep_:,i ~ N(K_f C^-1 y_:,i, C - K_f C^-1 K_f), C = K_f(Z_s) + beta^-1 I (Gadd et al. eq. 1's GP
    given Z; R&W eqs. 2.23-2.24 plus the noise), jointly over the n points, on the original scale of Y."""
    gplvm = model.gplvm
    flat = psi.reshape(-1, psi.shape[-1])
    Z = _gplvm_latent_draws(model, idata, flat, rng)
    n, k_y = gplvm.Y.shape
    out = np.empty((flat.shape[0], n, k_y))
    for s, (p, Zs) in enumerate(zip(flat, Z)):
        _, psi_f, log_beta = gplvm.split(p)
        K = gplvm.latent_kernel(psi_f, Zs)
        C = K.copy()
        C[np.diag_indices_from(C)] += np.exp(-log_beta)
        L = linalg.cholesky(C, name="K_f + beta^-1 I")
        A = linalg.solve_triangular(L, K, lower=True)
        mean = A.T @ linalg.solve_triangular(L, gplvm.Y, lower=True)  # K_f C^-1 Y
        cov = C - A.T @ A  # cov of f given Y, plus beta^-1 I: that of y_rep
        R = linalg.cholesky(0.5 * (cov + cov.T), name="cov(y_rep | Y, Z)")
        out[s] = mean + R @ rng.standard_normal((n, k_y))
    return out * model.y_scale + model.y_shift


def _new_input_draws(model, idata, psi, Xs, rng) -> np.ndarray:
    """y_* at the (standardised) new inputs ``Xs`` per posterior draw, flattened over (chain, draw)."""
    from .models import GPClassifier, GPLVMRegressor, GPRegressor, LatentGP, PoissonGP

    if _is_sparse(model):
        return _sparse_draws(model, idata, psi, Xs, rng)
    if isinstance(model, GPLVMRegressor):
        return _gplvm_new_input_draws(model, idata, psi, Xs, rng)
    flat = psi.reshape(-1, psi.shape[-1])
    m = Xs.shape[0]
    out = np.empty((flat.shape[0], m))
    if isinstance(model, GPRegressor):
        if model.gp.noise is not None and model.gp.new_noise(None) == 0.0:
            warnings.warn("gb.sample_posterior_predictive: the model's noise is known per training point "
                          "(GPRegressor(noise=...)), not at X_new: the draws at X_new are of f, without noise",
                          UserWarning, stacklevel=3)
        factors = {}
        for s, p in enumerate(flat):
            key = p.tobytes()
            if key not in factors:
                _, C = model.gp._cov(p)
                factors = {key: linalg.cholesky(C, name="K + lambda I", max_tries=1)}  # draws of a psi are adjacent
            theta = model.gp.kernel_psi(p)
            Ks, Kss = model.kernel(theta, model.X, Xs), model.kernel(theta, Xs)
            out[s] = _gp_conditional_draw(rng, factors[key], Ks, Kss, model.gp.y, model.gp.new_noise(p),
                                          "K_** - K_*^T (K + lambda I)^-1 K_*")
        # with a mean function model.gp models y - H b (R&W eq. 2.40): its prior mean H_* b is added back
        return (out + model.prior_mean_at(Xs)) * model.y_scale + model.y_shift
    if not isinstance(model, (GPClassifier, PoissonGP, LatentGP)):
        raise ValueError(f"gb.sample_posterior_predictive at X_new is not available for {type(model).__name__}: "
                         "use gb.predict(model, idata, X_new)")
    f = _latent(model, idata, "posterior predictive draws at X_new").reshape(flat.shape[0], -1)
    factors = {}
    for s, p in enumerate(flat):
        key = p.tobytes()
        kp = p[: model.kernel.n_params]  # the kernel's part of psi (a LatentGP's m is its last coordinate)
        if key not in factors:
            factors = {key: linalg.cholesky(model.kernel(kp, model.X), name="K")}
        Ks, Kss = model.kernel(kp, model.X, Xs), model.kernel(kp, Xs)
        out[s] = _gp_conditional_draw(rng, factors[key], Ks, Kss, f[s], 0.0, "K_** - K_*^T K^-1 K_*")
    if isinstance(model, LatentGP):  # y_* from f_* + m (m per draw with sample_offset, M&A Sec. 5; else 0)
        out = out + _offset(model, flat)
        return np.asarray(model.likelihood.sample_targets(rng, out), dtype=np.float64)
    if isinstance(model, PoissonGP):  # unit exposure: counts at the rate per unit exposure, exp(f_* + m)
        return rng.poisson(np.exp(out + model.offset)).astype(np.float64)
    p_pos = np.exp(model.likelihood.log_lik(np.ones_like(out), out))
    return np.where(rng.uniform(size=out.shape) < p_pos, 1.0, -1.0)


def latent_gp_predict(model, idata, Xs, *, y_new=None, max_draws: int = 200, rng=None) -> xr.Dataset:
    """``gpbayes.predict`` for a :class:`~gpbayes.models.LatentGP`: the latent predictive at each posterior
    draw (psi_s, f_s), up to ``max_draws`` of them, at the standardised new inputs ``Xs``.

    Per draw, f_* | f_s, psi_s ~ N(m_s, v_s) with m_s = K_*^T K^-1 f_s and v_s = k_** - diag(K_*^T
    K^-1 K_*) (the GP conditional, R&W eq. 2.19 with the noise-free K); with ``sample_offset`` the draw's
    constant m (M&A Sec. 5) is added, m_s = K_*^T K^-1 f_s + m, so f_* below is f_* + m, what the
    likelihood sees (the log-rate of a Poisson).  Returns what :func:`latent_mixture_predict` reports
    from these N(m_s, v_s): ``f_mean``, ``f_sd``, ``f_lower``/``f_upper``, ``y_mean`` and, given
    ``y_new``, ``log_predictive_density``.
    """
    rng = np.random.default_rng(0) if rng is None else rng
    psi, _ = _draws(idata)
    f = _latent(model, idata, "gb.predict").reshape(-1, model.n)
    psi = psi.reshape(-1, psi.shape[-1])
    if psi.shape[0] > max_draws:
        pick = np.sort(rng.choice(psi.shape[0], size=max_draws, replace=False))
        psi, f = psi[pick], f[pick]
    means, variances = [], []
    for p, fs in zip(psi, f):
        kp, m = model.kernel_params(p), float(model.latent_offset(p))
        L = linalg.cholesky(model.kernel(kp, model.X), name="K")
        A = linalg.solve_triangular(L, model.kernel(kp, model.X, Xs), lower=True)
        means.append(A.T @ linalg.solve_triangular(L, fs, lower=True) + m)
        variances.append(np.maximum(model.kernel.diag(kp, Xs) - np.einsum("ij,ij->j", A, A), 0.0))
    return latent_mixture_predict(model.likelihood, model.y, np.array(means), np.array(variances), rng, y_new,
                                  stacklevel=4)


def latent_mixture_predict(lik, y, means, variances, rng, y_new=None, *, stacklevel: int = 3,
                           draw_likelihoods=None) -> xr.Dataset:
    """What ``gpbayes.predict`` reports from per-draw latent predictives f_* ~ N(means_s, variances_s),
    ``means`` and ``variances`` (S, m), for a model with likelihood ``lik`` and training targets ``y``
    (a :class:`~gpbayes.models.LatentGP`, a :class:`~gpbayes.models.SparseGP`): over ``point``,
    ``f_mean`` and ``f_sd`` (moments of the mixture over draws, law of total variance), ``f_lower`` /
    ``f_upper`` (its 2.5 % and 97.5 % quantiles, from 2,000 draws of the mixture from ``rng``),
    ``y_mean`` (the average over draws of ``lik.predictive_mean(means_s, variances_s)``; left out, with
    a warning, when the likelihood inherits the protocol's binary default P(y = +1) while ``y`` are not
    labels in {-1, +1}) and, given ``y_new``, ``log_predictive_density``: log mean_s p(y_new | means_s,
    variances_s), each term ``lik.log_predictive_density`` (R&W eq. 3.80's integral; its sum in
    ``attrs["lpd"]``).  ``draw_likelihoods``: one likelihood per draw (a SparseGP whose Gaussian noise is
    sampled: each draw's own noise variance), used for ``y_mean`` and the density instead of ``lik``.
    """
    import warnings

    from scipy.special import logsumexp

    from .likelihoods import Likelihood

    f_mean = means.mean(axis=0)
    f_var = np.maximum((variances + means**2).mean(axis=0) - f_mean**2, 0.0)
    k = rng.integers(0, means.shape[0], size=2000)
    fs = means[k] + np.sqrt(variances[k]) * rng.standard_normal((2000, means.shape[1]))
    lo, hi = np.quantile(fs, [0.025, 0.975], axis=0)
    out = xr.Dataset({"f_mean": ("point", f_mean), "f_sd": ("point", np.sqrt(f_var)), "f_lower": ("point", lo),
                      "f_upper": ("point", hi)}, attrs={"likelihood": lik.name})
    inherited = getattr(type(lik), "predictive_mean", None) is Likelihood.predictive_mean
    if inherited and not np.all(np.isin(y, (-1.0, 1.0))):
        warnings.warn(f"gb.predict: the {lik.name} likelihood inherits Likelihood.predictive_mean, which is "
                      "P(y = +1) for labels in {-1, +1}, but its targets are not such labels: y_mean is left out; "
                      "define predictive_mean(mean, var) (E[y_*] under f_* ~ N(mean, var)) to get it",
                      UserWarning, stacklevel=stacklevel)
    liks = list(draw_likelihoods) if draw_likelihoods is not None else [lik] * means.shape[0]
    if len(liks) != means.shape[0]:
        raise ValueError(f"draw_likelihoods: {len(liks)} likelihoods for {means.shape[0]} draws")
    if not (inherited and not np.all(np.isin(y, (-1.0, 1.0)))):
        out["y_mean"] = ("point", np.mean([lk.predictive_mean(mu, v) for lk, mu, v in zip(liks, means, variances)],
                                          axis=0))
    if y_new is None:
        return out
    yn = np.asarray(lik.check_targets(np.asarray(y_new, dtype=np.float64).ravel()), dtype=np.float64)
    if yn.shape != f_mean.shape:
        raise ValueError(f"y_new must have one target per row of X_new ({f_mean.size}), got {yn.size}")
    lp = np.array([lk.log_predictive_density(yn, mu, v) for lk, mu, v in zip(liks, means, variances)])
    return _lpd(out, logsumexp(lp, axis=0) - np.log(lp.shape[0]))


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
