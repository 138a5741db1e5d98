"""Mean functions with a Gaussian prior on their coefficients, integrated out (R&W 2006 Sec. 2.7).

A mean function m(x) = h(x)^T beta with fixed basis functions h and coefficients beta ~ N(b, B):

* :class:`Constant` -- h(x) = 1: one coefficient, ``mean_constant``;
* :class:`Linear` -- h(x) = (1, x_1, ..., x_d): ``mean_constant`` and ``mean_coef`` (one per feature).

The GP g(x) = f(x) + h(x)^T beta, f ~ GP(0, k), is again a GP once beta is integrated out (R&W
eq. 2.40)::

    g ~ GP(h(x)^T b, k(x, x') + h(x)^T B h(x')),

so a model with a mean is the zero-mean model with the kernel :class:`MeanKernel` (k plus the
mean's term, with no parameter of its own) and the target shifted by H b: every method of
``gb.sample`` (exact regression, the latent-GP samplers, Laplace, EP, pseudo-marginal) runs on
it unchanged.  The coefficients are then drawn exactly from their Gaussian conditional given each
posterior draw (:func:`coefficient_conditional`; R&W Sec. 2.7, the beta_bar of eq. 2.41) and
``gb.predict`` includes the mean and its uncertainty (R&W eq. 2.41).

Notation: here H is the n x p matrix with rows h(x_i)^T (R&W's H transposed).  The prior is on
the model's scale -- the standardised inputs and target when ``standardize=True`` (the default),
the latent f of a classifier, the log-rate around its fixed offset for a PoissonGP: the default
beta ~ N(0, 1) per coefficient says "a mean of the order of the target's standard deviation".

>>> import numpy as np, gpbayes as gb
>>> X = np.linspace(0, 1, 12)[:, None]
>>> model = gb.GPRegressor(X, 5.0 + np.sin(6 * X[:, 0]), mean=gb.means.Constant(prior_sd=1.0))
>>> model.param_names
['tau_0', 'sigma', 'noise_variance']
"""

from __future__ import annotations

import dataclasses

import numpy as np

from . import linalg

__all__ = ["Mean", "Constant", "Linear", "MeanKernel", "coefficient_conditional", "draw_coefficients", "original_scale",
           "add_to_posterior"]


def _vector(value, p: int, name: str, owner: str, positive: bool) -> np.ndarray:
    v = np.asarray(value, dtype=np.float64)
    if v.ndim == 0:
        v = np.full(p, float(v))
    if v.shape != (p,) or not np.all(np.isfinite(v)) or (positive and np.any(v <= 0)):
        kind = "positive finite" if positive else "finite"
        raise ValueError(f"{owner}: {name} must be a {kind} number or {p} of them (one per coefficient), "
                         f"got {value!r}")
    return v


class Mean:
    """The base of the mean functions: m(x) = h(x)^T beta, beta ~ N(b, diag(prior_sd^2)) (R&W Sec. 2.7).

    A subclass defines ``name``, ``n_coef(d)`` and ``basis(X)`` (the n x p matrix H with rows
    h(x_i)^T) and has the fields ``prior_mean`` (b) and ``prior_sd`` (the square roots of B's
    diagonal), each a number or one per coefficient.
    """

    name = "mean"

    def n_coef(self, d: int) -> int:
        """The number of coefficients p for d input columns."""
        raise NotImplementedError

    def basis(self, X) -> np.ndarray:
        """H: the n x p matrix with rows h(x_i)^T."""
        raise NotImplementedError

    def prior(self, d: int) -> tuple[np.ndarray, np.ndarray]:
        """(b, B): the prior mean (p,) and covariance (p, p) of beta for d input columns."""
        p = self.n_coef(d)
        owner = type(self).__name__
        b = _vector(self.prior_mean, p, "prior_mean", owner, positive=False)
        sd = _vector(self.prior_sd, p, "prior_sd", owner, positive=True)
        return b, np.diag(sd * sd)

    def check(self, d: int) -> None:
        """Stop with a message naming the field when the prior does not fit d input columns."""
        self.prior(d)


@dataclasses.dataclass(frozen=True)
class Constant(Mean):
    """A constant mean m(x) = beta, beta ~ N(prior_mean, prior_sd^2); h(x) = 1 (R&W Sec. 2.7).

    Integrated out it adds the constant prior_sd^2 to every entry of K (R&W eq. 2.40).  Its draws are
    the posterior variable ``mean_constant``, on the scale of y (regression), of the latent f
    (classification) or of the log-rate with the model's fixed offset added (PoissonGP).

    Parameters
    ----------
    prior_mean : float, default 0.0
        b, on the model's scale (the standardised target by default).
    prior_sd : float, default 1.0
        sqrt(B): one standard deviation of the standardised target by default.
    """

    prior_mean: float = 0.0
    prior_sd: float = 1.0

    name = "constant"

    def __post_init__(self):
        self.check(1)

    def n_coef(self, d: int) -> int:
        """One coefficient."""
        return 1

    def basis(self, X) -> np.ndarray:
        """H = a column of ones (n x 1)."""
        return np.ones((np.asarray(X).shape[0], 1))


@dataclasses.dataclass(frozen=True)
class Linear(Mean):
    """A linear mean m(x) = beta_0 + sum_j beta_j x_j, beta ~ N(b, diag(prior_sd^2)); h(x) = (1, x) (R&W Sec. 2.7).

    Integrated out it adds the linear kernel sd_0^2 + sum_j sd_j^2 x_j x'_j to K (R&W eq. 2.40).  Its
    draws are the posterior variables ``mean_constant`` (the intercept) and ``mean_coef`` over the dim
    ``feature`` (named after X's columns when X had some), both on the original scales of X and y
    (undoing the standardisation).

    Parameters
    ----------
    prior_mean : float or sequence of 1 + d floats, default 0.0
        b: the intercept's, then each slope's prior mean, on the model's scale (standardised X and y
        by default).
    prior_sd : float or sequence of 1 + d floats, default 1.0
        The prior standard deviations of the intercept and the slopes (the square roots of B's diagonal).
    """

    prior_mean: object = 0.0
    prior_sd: object = 1.0

    name = "linear"

    def __post_init__(self):
        for field in ("prior_mean", "prior_sd"):  # frozen and hashable: a sequence is kept as a tuple
            v = getattr(self, field)
            if np.ndim(v) == 1:
                object.__setattr__(self, field, tuple(float(x) for x in v))
            elif np.ndim(v) != 0:
                raise ValueError(f"Linear: {field} must be a number or a sequence of 1 + d numbers, got {v!r}")
        if np.ndim(self.prior_mean) == 0 and np.ndim(self.prior_sd) == 0:
            self.check(1)

    def n_coef(self, d: int) -> int:
        """1 + d coefficients: the intercept and one slope per input column."""
        return 1 + int(d)

    def basis(self, X) -> np.ndarray:
        """H = [1, X] (n x (1 + d))."""
        X = np.asarray(X, dtype=np.float64)
        X = X[:, None] if X.ndim == 1 else X
        return np.column_stack([np.ones(X.shape[0]), X])


@dataclasses.dataclass(frozen=True)
class MeanKernel:
    """k(x, x') + h(x)^T B h(x'): a kernel with a mean's coefficients integrated out (R&W eq. 2.40).

    It implements the kernel protocol (``gpbayes.kernels.Kernel``) over ``kernel``'s parameters:
    the mean adds no parameter (b and B are fixed), so ``param_names``, the priors, ``initial_psi``,
    ``amplitude`` and the derivatives are the wrapped kernel's, and K gains the rank-p term H B H^T
    (a constant sd^2 for :class:`Constant`).  A model given ``mean=`` holds this as its ``kernel``
    (the user's kernel is ``kernel.kernel``).

    Parameters
    ----------
    kernel : the wrapped kernel (any implementation of the protocol).
    mean : a :class:`Mean` (its ``basis`` and ``prior``).
    input_dim : the number of input columns d (the basis's).
    """

    kernel: object
    mean: Mean
    input_dim: int

    def __post_init__(self):
        self.mean.check(self.input_dim)

    # -- what the wrapped kernel says -----------------------------------------------------------
    @property
    def n_params(self) -> int:
        """The wrapped kernel's number of log-parameters (the mean adds none)."""
        return self.kernel.n_params

    @property
    def param_names(self) -> list[str]:
        """The wrapped kernel's parameter names."""
        return list(self.kernel.param_names)

    @property
    def ard(self) -> bool:
        """The wrapped kernel's ``ard`` (one lengthscale per input), False if it has none."""
        return bool(getattr(self.kernel, "ard", False))

    @property
    def name(self) -> str:
        """The wrapped kernel's short name."""
        return getattr(self.kernel, "name", type(self.kernel).__name__.lower())

    def amplitude(self, psi) -> float:
        """The wrapped kernel's amplitude (jitter is added in its units)."""
        return self.kernel.amplitude(psi)

    def initial_psi(self, X, amplitude: float = 1.0) -> np.ndarray:
        """The wrapped kernel's starting point."""
        return self.kernel.initial_psi(X, amplitude=amplitude)

    def default_priors(self) -> tuple:
        """The wrapped kernel's default priors (``gpbayes.priors.default_kernel_prior``)."""
        from . import priors

        return tuple(priors.default_kernel_prior(self.kernel).components)

    # -- the mean's term ----------------------------------------------------------------------------
    def mean_term(self, X, X2=None) -> np.ndarray:
        """H(X) B H(X2)^T, the covariance of h(x)^T beta between the rows of X and X2 (R&W eq. 2.40)."""
        _, B = self.mean.prior(self.input_dim)
        H = self.mean.basis(X)
        H2 = H if X2 is None else self.mean.basis(X2)
        return (H @ B) @ H2.T

    def __call__(self, psi, X, X2=None) -> np.ndarray:
        """K(X, X2) + H(X) B H(X2)^T (R&W eq. 2.40), Fortran order."""
        K = np.array(self.kernel(psi, X, X2), dtype=np.float64, order="F")
        K += self.mean_term(X, X2)
        return K

    def diag(self, psi, X) -> np.ndarray:
        """diag K(X, X) + rowwise h(x_i)^T B h(x_i)."""
        _, B = self.mean.prior(self.input_dim)
        H = self.mean.basis(X)
        return np.asarray(self.kernel.diag(psi, X), dtype=np.float64) + np.einsum("ij,jk,ik->i", H, B, H)

    def gradients(self, psi, X, K=None) -> list[np.ndarray]:
        """The wrapped kernel's [dK/dpsi_i] (the mean's term does not depend on psi); ``K`` is not read
        (it holds the mean's term, which the wrapped kernel would take for its own)."""
        return self.kernel.gradients(psi, X)

    def gradient_traces(self, psi, X, W, K, overwrite_W: bool = False) -> np.ndarray:
        """tr(W dK/dpsi_i): the wrapped kernel's (or the protocol's fallback) at its own K(X, X)."""
        from .kernels import gradient_traces

        return gradient_traces(self.kernel, psi, X, W, self.kernel(psi, X), overwrite_W=overwrite_W)

    def cross_covariance_vjp(self, psi, X1, X2, K12, K_bar, inputs: bool = True):
        """The wrapped kernel's product (at its own K(X1, X2)) and, with ``inputs``, the mean's
        <K_bar, d H(X1) B H(X2)^T / dX1> added (non-zero for a basis that depends on x)."""
        g, dX = self.kernel.cross_covariance_vjp(psi, X1, X2, self.kernel(psi, X1, X2), K_bar, inputs)
        if inputs and isinstance(self.mean, Linear):
            _, B = self.mean.prior(self.input_dim)
            # d/dX1[m, j] of sum_{mn} K_bar_mn h(x1_m)^T B h(x2_n) = sum_n K_bar_mn (B h(x2_n))_(1 + j)
            dX = dX + K_bar @ (self.mean.basis(X2) @ B)[:, 1:]
        return g, dX

    def diag_vjp(self, psi, diag, diag_bar, X=None) -> np.ndarray:
        """The wrapped kernel's <diag_bar, d diag K/dpsi> at its own diagonal; needs ``X``."""
        if X is None:
            raise ValueError("MeanKernel.diag_vjp needs X (the wrapped kernel's diagonal is not the total's)")
        from .kernels.base import _diag_vjp

        return _diag_vjp(self.kernel, psi, X, diag_bar)

    def __repr__(self) -> str:
        return f"{self.kernel!r} + {self.mean!r}"


# ---------------------------------------------------------------------------
# the coefficients' conditional
# ---------------------------------------------------------------------------
def coefficient_conditional(H: np.ndarray, b: np.ndarray, B: np.ndarray, C_total_chol: np.ndarray,
                            r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and covariance of beta | r for r = g + H beta, g ~ N(0, C), beta ~ N(b, B) (R&W Sec. 2.7).

    R&W's form (the beta_bar of eq. 2.41, with C = K_y for regression, r = y)::

        cov  = A^-1,  A = B^-1 + H^T C^-1 H,
        mean = A^-1 (H^T C^-1 r + B^-1 b),

    computed here, equal by the matrix inversion lemma (R&W eq. A.9), from the factor of the
    marginal covariance C_total = C + H B H^T that the samplers factorise anyway (r ~ N(H b,
    C_total)): with V = L^-1 H B (L L^T = C_total),

        mean = b + V^T L^-1 (r - H b),   cov = B - V^T V,

    so no factor of C alone is needed and B may be singular.  ``r`` is y for regression (C =
    K + lambda I) or a draw of the latent f for a latent GP (C = K with its nugget).
    """
    V = linalg.solve_triangular(C_total_chol, H @ B, lower=True)
    u = linalg.solve_triangular(C_total_chol, np.asarray(r, dtype=np.float64) - H @ b, lower=True)
    mean = b + V.T @ u
    cov = B - V.T @ V
    return mean, 0.5 * (cov + cov.T)


def _gaussian_draw(rng: np.random.Generator, mean: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """One draw of N(mean, cov) for a small p x p cov (symmetric square root: cov may be semi-definite)."""
    w, U = np.linalg.eigh(cov)
    return mean + U @ (np.sqrt(np.maximum(w, 0.0)) * rng.standard_normal(mean.size))


def draw_coefficients(model, psi: np.ndarray, rng: np.random.Generator, f: np.ndarray | None = None,
                      approximation: str | None = None) -> np.ndarray:
    """One draw of beta per posterior draw, on the model's scale; (S, p) for psi (S, n_params).

    * GPRegressor: exactly from beta | y, psi (:func:`coefficient_conditional` with r = the
      standardised y and C_total = K + H B H^T + lambda I, R&W Sec. 2.7).
    * GPClassifier / PoissonGP with latent draws ``f`` (S, n): exactly from beta | f, psi (r = f,
      C_total = K + H B H^T): with the draws of (psi, f) from the posterior, (psi, f, beta) is one.
    * without ``f``: f is first drawn from the Gaussian approximation q(f | y, psi) named
      ``approximation`` (the likelihood's first by default: EP for the probit, Laplace otherwise),
      then beta | f -- beta's marginal under q, as ``gb.predict`` uses q for such draws.

    One O(n^3) factorisation per distinct psi (two without ``f``: the approximation's too); a
    point repeated by an MH chain is factorised once.
    """
    mean = model.mean
    X = model.X
    H = mean.basis(X)
    b, B = mean.prior(X.shape[1])
    psi = np.atleast_2d(np.asarray(psi, dtype=np.float64))
    out = np.empty((psi.shape[0], H.shape[1]))
    regression = hasattr(model, "gp")
    cache: dict = {}
    for s, p in enumerate(psi):
        key = p.tobytes()
        if key not in cache:
            if regression:
                _, C = model.gp._cov(p)
                name = "K + H B H^T + lambda I"
            else:
                C = model.kernel(p, X)
                name = "K + H B H^T"
            cache[key] = (linalg.cholesky(C, name=name, max_tries=3 if not regression else 1), C)
        L, C = cache[key]
        if regression:
            r = model.y  # the standardised target (gp.y is y - H b)
        elif f is not None:
            r = f[s]
        else:
            r = _approximate_latent(model, p, C, L, rng, approximation)
        m, V = coefficient_conditional(H, b, B, L, r)
        out[s] = _gaussian_draw(rng, m, V)
    return out


def _approximate_latent(model, p, C, L, rng, approximation):
    """One draw of f from q(f | y, psi) (the likelihood's first approximation unless named)."""
    import warnings

    from .approx import ConvergenceWarning

    approx = approximation or model.likelihood.approximations[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if approx == "ep":
            from .approx.ep import ep_approximation

            q = ep_approximation(C, model.y, likelihood=model.likelihood, K_chol=L)
        else:
            from .approx.laplace import laplace_approximation

            q = laplace_approximation(C, model.y, model.likelihood, K_chol=L)
    return q.sample(rng, 1, K_chol=L)[0]


def original_scale(model, beta: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """(constant, slopes) of the mean function on the original scales of X and of what is modelled.

    With x_std = (x - x_shift) / x_scale and the model's quantity q = shift + scale * g (regression:
    y's shift and scale; classifier: 0 and 1; PoissonGP: the fixed log-rate offset and 1),
    shift + scale (beta_0 + sum_j beta_j x_std_j) = constant + sum_j slope_j x_j with
    slope_j = scale beta_j / x_scale_j, constant = shift + scale (beta_0 - sum_j beta_j x_shift_j / x_scale_j).
    ``beta`` is (..., p); slopes None for a constant mean.
    """
    shift = getattr(model, "y_shift", getattr(model, "offset", 0.0))
    scale = getattr(model, "y_scale", 1.0)
    beta = np.asarray(beta, dtype=np.float64)
    if beta.shape[-1] == 1:
        return shift + scale * beta[..., 0], None
    slopes = beta[..., 1:] / model.x_scale
    constant = shift + scale * (beta[..., 0] - slopes @ model.x_shift)
    return constant, scale * slopes


def add_to_posterior(model, groups: dict, rng: np.random.Generator) -> None:
    """Add the mean's draws to ``gb.sample``'s ``posterior`` group (in place).

    ``mean_constant`` over (chain, draw) and, for :class:`Linear`, ``mean_coef`` over (chain, draw,
    feature) (the features named after X's columns when it had some), on the original scales
    (:func:`original_scale`): one draw of beta per posterior draw (:func:`draw_coefficients`, from
    ``posterior["f"]`` where the method keeps f).  The attribute ``mean_draws`` says how beta was drawn.
    """
    from .io import stack_hyperparameters

    psi = stack_hyperparameters(groups["unconstrained_posterior"]).values  # (chain, draw, p)
    shape = psi.shape[:2]
    post = groups["posterior"]
    regression = hasattr(model, "gp")
    f = post["f"].values.reshape(-1, model.n) if "f" in post and not regression else None
    beta = draw_coefficients(model, psi.reshape(-1, psi.shape[-1]), rng, f=f)
    constant, slopes = original_scale(model, beta)
    post["mean_constant"] = (("chain", "draw"), constant.reshape(shape))
    if slopes is not None:
        d = slopes.shape[-1]
        post.coords["feature"] = getattr(model, "feature_names", None) or list(range(d))
        post["mean_coef"] = (("chain", "draw", "feature"), slopes.reshape(*shape, d))
    if regression:
        how = "exact: beta | y, psi (R&W Sec. 2.7)"
    elif f is not None:
        how = "exact: beta | f, psi (the latent draws f)"
    else:
        how = (f"beta | f, psi with f drawn from the {model.likelihood.approximations[0]} approximation "
               "q(f | y, psi) (the method keeps no f)")
    post.attrs["mean_draws"] = how
