"""Importance sampling (Xiong et al.): AMIS, MAMIS, AMIS then MAMIS on the exact GP-regression
posterior, and PM-AMIS on the noisy importance estimate of a latent-Gaussian model's marginal; the
weighted sample in the ArviZ schema (:func:`weighted_groups`).
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import numpy as np
import xarray as xr

from .. import amis as amis_mod
from .. import io
from ..models import GPClassifier, GPRegressor
from .base import (_APPROXIMATIONS, Method, _approximation_problem, _check_option_first, _choice, _data_groups,
                   _float, _hyperparameter_groups, _int, _lazy, _matrix, _name, _pm_target)
from .exact import _mode_and_cov

__all__ = ['AMIS', 'MAMIS', 'AMISToMAMIS', 'MAMISP', 'PMAMIS', 'weighted_groups']


def weighted_groups(model, res: amis_mod.AMISResult, rng, n_resample: int, attrs: dict):
    """Importance-sampling results in the ArviZ schema.

    ``posterior``/``unconstrained_posterior``: ``n_resample`` draws resampled
    with replacement in proportion to the normalised weights (multinomial), so
    that every ArviZ function (``az.summary``, ``az.plot_posterior``) sees
    equally weighted draws.  ``sample_stats``: the weighted sample itself over
    the dim ``importance_sample`` -- ``importance_psi`` (log-scale draws over
    ``param``), ``log_weight`` (unnormalised) and ``weight`` (normalised) --
    and, per posterior draw, ``resample_index`` (which importance draw it is).
    Attributes: Kish's ``ess`` = 1 / sum w^2, ``n_cubic``, ``n_target_evals``.
    """
    names = model.hyperparameter_labels
    w = res.normalised_weights
    X = np.asarray(res.samples)
    idx = rng.choice(w.size, size=n_resample, replace=True, p=w)
    groups = _hyperparameter_groups(model, X[None, idx], attrs)
    ss = xr.Dataset({"resample_index": (("chain", "draw"), idx[None]),
                     "importance_psi": (("chain", "importance_sample", "param"), X[None]),
                     "log_weight": (("chain", "importance_sample"), np.asarray(res.log_weights)[None]),
                     "weight": (("chain", "importance_sample"), w[None])},
                    coords={"chain": [0], "draw": np.arange(n_resample), "param": names})
    ss.attrs.update({**io.arviz_attrs(), **attrs, "ess": 1.0 / float(np.sum(w * w)),
                     "n_cubic": int(np.asarray(res.n_cubic)[-1]), "n_target_evals": int(res.n_target_evals)})
    groups["sample_stats"] = ss
    groups.update(_data_groups(model))
    return groups


_COVARIANCES = ("full", "diag")
#: the field ``covariance`` -> ``amis.run_amis``'s name for it
_RUN_COVARIANCE = {"full": "full", "diag": "diagonal"}
#: why ``n_resample``'s default belongs to the API (no library function has the field)
_N_RESAMPLE_REASON = "the number of draws resampled into posterior (equally weighted), an API output"
_Q0_REASON = ("None: the API's q_0 from the model (found from the run's generator); given, the run draws "
              "only its samples from the generator")


def _vector(obj, field: str) -> None:
    """A finite vector given as an array: stored as a tuple of floats (frozen, comparable, JSON-able)."""
    v = getattr(obj, field)
    if v is None:
        return
    a = np.asarray(v, dtype=np.float64)
    if a.ndim != 1 or a.size == 0 or not np.all(np.isfinite(a)):
        raise ValueError(f"{_name(obj, field)} must be a finite vector or None, got shape {a.shape}")
    object.__setattr__(obj, field, tuple(float(x) for x in a))


def _check_q0(obj) -> None:
    """``initial_mean`` (p,) and ``initial_cov`` (p, p): both None or both given, of matching sizes."""
    _vector(obj, "initial_mean")
    _matrix(obj, "initial_cov")
    mean, cov = obj.initial_mean, obj.initial_cov
    if (mean is None) != (cov is None):
        raise ValueError(f"{type(obj).__name__}.initial_mean and initial_cov: give both (q_0 = N(initial_mean, "
                         f"initial_cov)) or neither, got initial_mean={'None' if mean is None else 'given'}, "
                         f"initial_cov={'None' if cov is None else 'given'}")
    if mean is not None and len(cov) != len(mean):
        raise ValueError(f"{type(obj).__name__}.initial_cov is {len(cov)} x {len(cov)}, initial_mean has "
                         f"{len(mean)} entries")


def _q0_of(method, model):
    """q_0's (mean, covariance) as arrays when the method's fields give them (checked against the
    model's number of hyperparameters), else None."""
    if method.initial_mean is None:
        return None
    p = len(model.param_names)
    if len(method.initial_mean) != p:
        raise ValueError(f"{type(method).__name__}.initial_mean has {len(method.initial_mean)} entries, the model "
                         f"{p} hyperparameters {model.param_names}")
    return np.array(method.initial_mean), np.array(method.initial_cov)


class _Weighted(Method, register=False):
    """An importance sample (one weighted "chain"): ``posterior`` holds ``n_resample`` draws resampled
    in proportion to the weights (equally weighted), ``sample_stats`` the weighted sample
    (``importance_psi``, ``log_weight``, ``weight``; :func:`weighted_groups`)."""

    def to_groups(self, model, result, rngs, attrs):
        return weighted_groups(model, result, rngs[0], self.n_resample, attrs)


    def _target(self, model, rng):
        """The exact log posterior and q_0's mean and covariance: the fields ``initial_mean``/``initial_cov``
        when given, else the MAP and (-H)^-1 there (``_mode_and_cov``, from ``rng``)."""
        from ..posterior import log_posterior

        q0 = _q0_of(self, model)
        if q0 is None:
            fit, cov = _mode_and_cov(model, rng)
            q0 = fit.psi, cov
        return amis_mod.exact(log_posterior(model.gp, model.prior)), q0[0], q0[1]

    def _check_common(self):
        _choice(self, "covariance", _COVARIANCES)
        _int(self, "n_resample", 1)
        _check_q0(self)

    @property
    def _covariance(self) -> str:
        """``covariance`` in ``amis.run_amis``'s spelling (``"diag"`` -> ``"diagonal"``)."""
        return _RUN_COVARIANCE[self.covariance]


@dataclasses.dataclass(frozen=True)
class AMIS(_Weighted):
    """AMIS (Xiong et al. Alg. 1; Cornuet et al. 2012): ``n_iterations`` iterations of
    ``n_per_iteration`` draws, every past draw re-weighted against the deterministic mixture of all
    proposals, the Gaussian proposal moment-matched (``covariance`` ``"full"`` or ``"diag"``) to the
    weighted sample; q_0 = N(MAP, (-H)^-1).

    Parameters
    ----------
    n_iterations : int, default 100
        Adaptation iterations T.
    n_per_iteration : int, default 50
        Draws per iteration N (T N draws, each costing one O(n^3) marginal likelihood).
    covariance : {"full", "diag"}, default "full"
        The moment-matched proposal covariance: full or diagonal.
    n_resample : int, default 1000
        Draws resampled in proportion to the weights into ``posterior``.
    initial_mean, initial_cov : (p,) and (p, p) arrays or None, default None
        q_0 = N(initial_mean, initial_cov), both given or neither; None: the MAP and (-H)^-1 there,
        found from the run's generator.  Xiong et al. (Sec. 4.3.1) compute q_0 once before the runs
        and start every run from it; given here, the run draws only its samples from the generator.
    """

    n_iterations: int = 100
    n_per_iteration: int = 50
    covariance: str = "full"
    n_resample: int = 1000
    initial_mean: Any = None
    initial_cov: Any = None

    aliases: ClassVar = {"amis": {}}
    models: ClassVar = (GPRegressor,)
    library: ClassVar = {f: _lazy("amis", "amis") for f in ("n_iterations", "n_per_iteration", "covariance")}
    own_defaults: ClassVar = {"n_resample": _N_RESAMPLE_REASON, "initial_mean": _Q0_REASON,
                              "initial_cov": _Q0_REASON}

    def __post_init__(self):
        _int(self, "n_iterations", 1)
        _int(self, "n_per_iteration", 1)
        self._check_common()

    def run(self, model, rngs, *, n_draws, n_warmup, callback=None, stop=None):
        """Xiong et al. Alg. 1 on the exact log posterior from q_0 = N(MAP, (-H)^-1): ``amis.amis``."""
        logt, mean0, cov = self._target(model, rngs[0])
        return amis_mod.amis(rngs[0], logt, mean0, cov, n_iterations=self.n_iterations,
                             n_per_iteration=self.n_per_iteration, covariance=self._covariance)


@dataclasses.dataclass(frozen=True)
class MAMIS(_Weighted):
    """MAMIS (Xiong et al. Alg. 2; Marin et al. 2019): iteration t draws N_t = ``base`` + ``slope`` t
    samples (t = 1..``n_iterations``), weighted against the current proposal only, which is
    moment-matched to them; q_0 = N(MAP, (-H)^-1).  The default slope 20 is the library's
    (``amis.mamis_sample_sizes``); Xiong et al.'s Table 3 uses 26 (RBF), which the reproduction
    passes explicitly.

    Parameters
    ----------
    n_iterations : int, default 30
        Iterations T.
    base, slope : int, default 0, 20
        Iteration t draws N_t = base + slope t samples.
    covariance : {"full", "diag"}, default "full"
        The moment-matched proposal covariance: full or diagonal.
    n_resample : int, default 1000
        Draws resampled in proportion to the weights into ``posterior``.
    initial_mean, initial_cov : (p,) and (p, p) arrays or None, default None
        q_0 = N(initial_mean, initial_cov), both given or neither; None: the MAP and (-H)^-1 there,
        found from the run's generator.  Xiong et al. (Sec. 4.3.1) compute q_0 once before the runs
        and start every run from it; given here, the run draws only its samples from the generator.
    """

    n_iterations: int = 30
    base: int = 0
    slope: int = 20
    covariance: str = "full"
    n_resample: int = 1000
    initial_mean: Any = None
    initial_cov: Any = None

    aliases: ClassVar = {"mamis": {}}
    models: ClassVar = (GPRegressor,)
    library: ClassVar = {"n_iterations": _lazy("amis", "mamis_sample_sizes"),
                         "base": _lazy("amis", "mamis_sample_sizes"), "slope": _lazy("amis", "mamis_sample_sizes"),
                         "covariance": _lazy("amis", "mamis")}
    own_defaults: ClassVar = {"n_resample": _N_RESAMPLE_REASON, "initial_mean": _Q0_REASON,
                              "initial_cov": _Q0_REASON}

    def __post_init__(self):
        _int(self, "n_iterations", 1)
        _int(self, "base", 0)
        _int(self, "slope", 0)
        if self.base + self.slope < 1:
            raise ValueError(f"MAMIS needs N_1 = base + slope >= 1 draws, got base={self.base}, slope={self.slope}")
        self._check_common()

    def sizes(self) -> list[int]:
        """N_t = base + slope t, t = 1..n_iterations (``amis.mamis_sample_sizes``)."""
        return amis_mod.mamis_sample_sizes(self.n_iterations, base=self.base, slope=self.slope)

    def run(self, model, rngs, *, n_draws, n_warmup, callback=None, stop=None):
        """Xiong et al. Alg. 2 with the sample sizes :meth:`sizes` from q_0 = N(MAP, (-H)^-1): ``amis.mamis``."""
        logt, mean0, cov = self._target(model, rngs[0])
        return amis_mod.mamis(rngs[0], logt, mean0, cov, self.sizes(), covariance=self._covariance)


@dataclasses.dataclass(frozen=True)
class AMISToMAMIS(MAMIS):
    """AMIS for tuning (``n_tuning_samples`` draws, ``n_per_iteration_amis`` per iteration), then MAMIS
    from AMIS's last proposal (Xiong et al. Sec. 4.4, Table 5); the result is MAMIS's, its costs
    include the tuning (``tuning_n_cubic``).

    Parameters
    ----------
    n_iterations, base, slope, covariance, n_resample
        As for :class:`MAMIS` (the MAMIS phase): default 30, 0, 20, "full", 1000.
    initial_mean, initial_cov
        As for :class:`MAMIS`: q_0 of the AMIS tuning phase (default None: MAP and (-H)^-1).
    n_tuning_samples : int, default 1000
        Draws of the AMIS tuning phase.
    n_per_iteration_amis : int, default 50
        Draws per AMIS iteration.
    """

    n_tuning_samples: int = 1000
    n_per_iteration_amis: int = 50

    aliases: ClassVar = {"amis-mamis": {}}
    library: ClassVar = {**MAMIS.library, "n_tuning_samples": _lazy("amis", "amis_then_mamis"),
                         "n_per_iteration_amis": _lazy("amis", "amis_then_mamis")}

    def __post_init__(self):
        super().__post_init__()
        _int(self, "n_tuning_samples", 1)
        _int(self, "n_per_iteration_amis", 1)

    def run(self, model, rngs, *, n_draws, n_warmup, callback=None, stop=None):
        """AMIS tuning, then MAMIS from its last proposal (Xiong et al. Table 5): ``amis.amis_then_mamis``."""
        logt, mean0, cov = self._target(model, rngs[0])
        return amis_mod.amis_then_mamis(rngs[0], logt, mean0, cov, n_tuning_samples=self.n_tuning_samples,
                                        n_per_iteration_amis=self.n_per_iteration_amis, mamis_sizes=self.sizes(),
                                        covariance=self._covariance)[0]


@dataclasses.dataclass(frozen=True)
class MAMISP(MAMIS):
    """MAMIS-P (Xiong et al. Sec. 4.5.2, last paragraph; Fig. 7): MAMIS (Alg. 2) whose moment match
    (step 4) is regularised by an informative normal-inverse-Wishart prior on the proposal's (mu,
    Sigma) centred on q_0 = N(MAP, (-H)^-1), the paper's "Gaussian approximation to the posterior"
    (``amis.regularised_moments``: mu_hat = (nu0 m0 + n x_bar) / (nu0 + n), Sigma_hat =
    [nu0 S0 + n S + nu0 n / (nu0 + n) (x_bar - m0)(x_bar - m0)^T] / (nu0 + n), our reconstruction of
    the paper's words); the sample sizes are MAMIS's.

    Parameters
    ----------
    n_iterations, base, slope, covariance, n_resample, initial_mean, initial_cov
        As for :class:`MAMIS` (default 30, 0, 20, "full", 1000, None, None); the prior is centred
        on q_0 = N(initial_mean, initial_cov) when given.
    prior_strength : float or None, default None
        nu0, the pseudo-samples the prior is worth; None: d + 2, the weakest integer
        inverse-Wishart prior with a finite mean (the paper states none); 0 is MAMIS up to rounding.
    data_count : {"ess", "n"}, default "ess"
        What the iteration's weighted samples count as: their Kish effective sample size, or their
        number N_t.
    """

    prior_strength: float | None = None
    data_count: str = "ess"

    aliases: ClassVar = {"mamis-p": {}}
    library: ClassVar = {**MAMIS.library, "covariance": _lazy("amis", "mamis_p"),
                         "prior_strength": _lazy("amis", "mamis_p"), "data_count": _lazy("amis", "mamis_p")}

    def __post_init__(self):
        super().__post_init__()
        _float(self, "prior_strength", 0.0, open_low=False, optional=True)
        _choice(self, "data_count", ("ess", "n"))

    def run(self, model, rngs, *, n_draws, n_warmup, callback=None, stop=None):
        """MAMIS-P with the sample sizes :meth:`sizes` from q_0, its prior centred on q_0: ``amis.mamis_p``."""
        logt, mean0, cov = self._target(model, rngs[0])
        return amis_mod.mamis_p(rngs[0], logt, mean0, cov, self.sizes(), covariance=self._covariance,
                                prior_strength=self.prior_strength, data_count=self.data_count)


@dataclasses.dataclass(frozen=True)
class PMAMIS(_Weighted):
    """PM-AMIS (Xiong et al. Sec. 3.1): AMIS on the noisy importance estimate of p(y | theta)
    (F&G eq. 25, ``n_imp`` draws from the ``approximation``; None: EP for the probit, else Laplace),
    ``n_iterations`` x ``n_per_iteration``; q_0 = N(EP type-II MAP, 0.25 I).  The defaults 20 x 100
    are the library's (``amis.pm_amis``), sized for a first run; Xiong et al.'s 60 x 400 are passed
    explicitly by the reproduction.

    Parameters
    ----------
    approximation : {"laplace", "ep"} or None, default None
        Importance density of the eq. 25 estimate; None: the likelihood's first choice
        (EP for the probit, Laplace otherwise).
    n_imp : int, default 64
        Importance draws per marginal-likelihood estimate.
    n_iterations, n_per_iteration : int, default 20, 100
        AMIS iterations and draws per iteration (each draw one noisy estimate).
    covariance : {"full", "diag"}, default "full"
        The moment-matched proposal covariance: full or diagonal.
    n_resample : int, default 1000
        Draws resampled in proportion to the weights into ``posterior``.
    initial_mean, initial_cov : (p,) and (p, p) arrays or None, default None
        q_0 = N(initial_mean, initial_cov), both given or neither; None: N(EP type-II MAP, 0.25 I),
        the MAP found from the run's generator.  Xiong et al. start from the mode and (-H)^-1 of the
        approximate marginal, computed once before the runs; given here, the run draws only its
        samples from the generator.
    """

    approximation: str | None = None
    n_imp: int = 64
    n_iterations: int = 20
    n_per_iteration: int = 100
    covariance: str = "full"
    n_resample: int = 1000
    initial_mean: Any = None
    initial_cov: Any = None

    aliases: ClassVar = {"pm-amis": {}}
    models: ClassVar = (GPClassifier,)
    library: ClassVar = {f: _lazy("amis", "pm_amis") for f in ("n_iterations", "n_per_iteration", "covariance")}
    own_defaults: ClassVar = {
        "approximation": "None: EP for the probit (Xiong et al.), Laplace otherwise",
        "n_imp": "F&G's N_imp = 64 (PseudoMarginalTarget's default 1 is the bare estimator)",
        "n_resample": _N_RESAMPLE_REASON, "initial_mean": _Q0_REASON, "initial_cov": _Q0_REASON}

    def __post_init__(self):
        _choice(self, "approximation", _APPROXIMATIONS, optional=True)
        _int(self, "n_imp", 1)
        _int(self, "n_iterations", 1)
        _int(self, "n_per_iteration", 1)
        self._check_common()

    def _approx(self, model) -> str:
        if self.approximation is not None:
            return self.approximation
        return model.likelihood.approximations[0]  # the likelihood's first choice (EP for the probit)

    def why_not(self, model):
        """Also refused: an ``approximation`` (or the likelihood's default one) the likelihood does
        not offer (``Likelihood.approximations``)."""
        return super().why_not(model) or _approximation_problem(model, self._approx(model))

    def check(self, model):
        """Stop with the option's own message when the model fits but the option does not; otherwise
        as :meth:`Method.check`."""
        _check_option_first(self, model)

    def run(self, model, rngs, *, n_draws, n_warmup, callback=None, stop=None):
        """Xiong et al. Sec. 3.1: ``amis.pm_amis`` on the ``n_imp``-draw estimate of F&G eq. 25 from
        q_0 = N(EP type-II MAP, 0.25 I)."""
        from ..classification import fit_ep_type2_ml

        rng = rngs[0]
        target = _pm_target(model, self._approx(model), self.n_imp)
        from ..likelihoods import Probit

        q0 = _q0_of(self, model)
        if q0 is None:
            # q_0's centre: EP type-II ML with the model's likelihood; one without EP (the logistic) keeps the
            # probit's EP-ML as its starting point, as before
            start = model.likelihood if "ep" in model.likelihood.approximations else Probit()
            ml = fit_ep_type2_ml(model.X, model.y, model.kernel, rng, log_prior=model.prior, likelihood=start)
            q0 = ml.psi, np.eye(ml.psi.size) * 0.25
        return amis_mod.pm_amis(rng, target, q0[0], q0[1], n_iterations=self.n_iterations,
                                n_per_iteration=self.n_per_iteration, covariance=self._covariance)
