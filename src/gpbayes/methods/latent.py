"""Methods of the latent-Gaussian models (GPClassifier, PoissonGP, LatentGP): pseudo-marginal MH (F&G), NUTS
with an importance-sampling correction, NUTS on the whitened joint posterior, F&G's AA/SURR Gibbs,
Murray & Adams' slice sampling in six representations, and EP type-II maximum likelihood.
"""

from __future__ import annotations

import dataclasses
import numbers
import warnings
from typing import Any, ClassVar

import numpy as np

from .. import linalg
from ..mcmc import hyper_slice, runner
from ..models import GPClassifier, LatentGP, PoissonGP
from .base import (_APPROXIMATIONS, Method, _bool, _check_option_first, _choice, _estimator_problem, _float, _int,
                   _lazy, _matrix, _name, _pm_target, _point, posterior_groups, run_specs)

__all__ = ['PseudoMarginal', 'ISCorrectedNUTS', 'WhitenedNUTS', 'LatentGibbs', 'SliceSampler', 'EPML']

#: the starting points of the ``init`` field (``_Latent._psi0``)
_INITS = ("kernel", "prior")
_INIT_REASON = ("the API's start, the kernel's initial psi plus N(0, 0.1^2) noise; 'prior' (a prior draw, F&G "
                "Sec. 4.2) is opt-in")


class _Latent(Method, register=False):
    """A method of the latent-Gaussian models (GPClassifier, PoissonGP, LatentGP): chains start at the
    kernel's initial psi plus N(0, 0.1^2) noise, or, for a method with the field ``init="prior"``, at a draw
    of the model's prior (F&G Sec. 4.2: "The chains were initialized from the prior").

    Which keep the latent f per draw (``posterior["f"]``, needed by ``gb.compute_log_likelihood``
    / ``az.loo`` and ``gb.sample_posterior_predictive``): :class:`WhitenedNUTS` always,
    :class:`SliceSampler` and :class:`LatentGibbs` with ``keep_latent=True``; not
    :class:`PseudoMarginal` or :class:`ISCorrectedNUTS` (their chains move psi alone).
    :meth:`keeps_latent` says so per method object and model.  A :class:`~gpbayes.models.LatentGP`
    result always holds f (``gb.predict`` reads it), so the methods that keep none are refused for it."""

    models: ClassVar = (GPClassifier, PoissonGP, LatentGP)
    init_components: ClassVar = ("psi",)
    #: the method keeps f per draw on every model (WhitenedNUTS, SliceSampler)
    _keeps_latent: ClassVar[bool] = False
    #: the method samples the constant m of ``LatentGP(sample_offset=True)`` with psi (M&A Sec. 5): the
    #: samplers built on ``representations.LatentGaussianModel`` (SliceSampler, LatentGibbs)
    takes_offset: ClassVar[bool] = False

    def keeps_latent(self, model) -> bool:
        """Does a run on ``model`` keep f per draw (``posterior["f"]``)?"""
        return self._keeps_latent

    def why_not(self, model):
        """Also refused: a :class:`~gpbayes.models.LatentGP` with ``sample_offset=True`` and a method that
        cannot sample m (:attr:`takes_offset` False), and a LatentGP with a method that keeps no f."""
        reason = super().why_not(model)
        if reason is None and getattr(model, "sample_offset", False) and not self.takes_offset:
            return (f"method {self.label!r} cannot sample the constant m of LatentGP(sample_offset=True) (M&A "
                    "Sec. 5's mean offset, slice-sampled with psi); use 'slice-<representation>' (e.g. "
                    "'slice-surr-site'), 'aa' or 'surr', or sample_offset=False")
        if reason is None and isinstance(model, LatentGP) and not self.keeps_latent(model):
            return (f"method {self.label!r} keeps no latent f, which a LatentGP result holds (gb.predict reads "
                    "it); use 'nuts-whitened', 'slice-<representation>', 'aa' or 'surr'")
        return reason

    def _psi0(self, model, rng, c: int):
        """Chain c's first psi: the psi given to ``gb.sample(init=...)`` (no draw), else drawn from the
        chain's generator: ``model.prior.sample_psi(rng)`` when the method's ``init`` is ``"prior"``,
        else the kernel's initial psi (and for a LatentGP with ``sample_offset`` its m,
        ``LatentGP.initial_psi``) plus N(0, 0.1^2) noise."""
        given = self._start(c)
        if given is not None:
            return given["psi"].copy()
        if getattr(self, "init", "kernel") == "prior":
            return np.asarray(model.prior.sample_psi(rng), dtype=np.float64)
        psi_init = model.initial_psi() if isinstance(model, LatentGP) else model.kernel.initial_psi(model.X)
        return psi_init + 0.1 * rng.standard_normal(psi_init.size)

    def _f0(self, model, psi0, rng, c: int):
        """Chain c's first f: the f given to ``gb.sample(init=...)`` (no draw), else f_0 ~ N(0, K(psi_0))
        from the chain's generator (K at the kernel's part of psi_0, without m)."""
        given = self._start(c)
        if given is not None and "f" in given:
            return given["f"].copy()
        K = model.kernel(psi0[: model.kernel.n_params], model.X)
        return linalg.cholesky(K, name="K(psi0)", count=False) @ rng.standard_normal(model.n)

    def _lgm(self, model):
        """The model as ``representations.LatentGaussianModel`` (with ``sample_offset``, m psi's last
        coordinate, added to f by ``likelihood.with_offset``: M&A Sec. 5)."""
        from ..representations import LatentGaussianModel

        return LatentGaussianModel(model.kernel, model.X, model.likelihood, model.y, model.prior,
                                   sample_offset=getattr(model, "sample_offset", False))


@dataclasses.dataclass(frozen=True)
class PseudoMarginal(_Latent):
    """Pseudo-marginal MH as Filippone & Girolami run it (Sec. 4.4, Alg. 1): an adaptive phase of
    ``n_warmup`` iterations of MH on the deterministic approximate posterior (``adapt_on``: the
    Laplace marginal, R&W eq. 3.32, or log Z_EP) tuning the proposal towards ``target_accept``
    (starting at ``proposal_cov``, None: 0.1 I, scale ``initial_scale``, covariance re-estimated when
    ``adapt_covariance``), then frozen PM-MH on the unbiased importance estimate of p(y | theta)
    (eq. 25) with ``n_imp`` draws from the ``approximation`` (``"laplace"`` or ``"ep"``, the probit's).

    Parameters
    ----------
    approximation : {"laplace", "ep"}, default "laplace"
        The Gaussian approximation of p(f | y, theta) used as importance density in the
        estimate of eq. 25 (EP where the likelihood offers it: the probit).
    n_imp : int or "auto", default 64
        Importance draws per estimate (F&G's N_imp).  ``"auto"``: chosen per chain after its adaptive
        phase by ``gpbayes.estimators.importance.choose_n_imp`` (noise-aware: the smallest N_imp whose
        predicted sd of log p~ is Doucet, Pitt, Deligiannidis & Kohn's (2015) 1.2, measured from 32
        repeated estimates at the mode of the deterministic approximate posterior -- climbed to from
        the adaptive phase's end point -- first with 64 draws, then once more at the choice; with
        ``rho > 0`` the noise of the log-ratio between the mode and one proposal from it, under the
        Crank-Nicolson move, held at sqrt(2) x 1.2), bounded by 1 and 4096.
        The measurement draws from the chain's own generator, so chains stay reproducible and
        independent of ``cores``.  Recorded per chain in the params (``sample_stats`` variables
        ``tuned_n_imp``, ``tuned_n_imp_sd_log_estimate``, ``tuned_n_imp_sd_log_ratio``,
        ``tuned_n_imp_pilot_sd``, ``tuned_n_imp_rounds``, ``tuned_n_imp_time``, ``tuned_n_imp_n_cubic``,
        ``tuned_n_imp_at_mode``, ``tuned_n_imp_ratio_at_proposal``, ``tuned_n_imp_c_ratio``: far from
        1, the c / N law the choice extrapolates by did not hold; the point measured at is
        ``n_imp_psi`` in the chain's params).
        Measured on a 13-feature ARD probit problem (``benchmarks/bench_sticking.py``), ``"auto"``
        chose 5-10 draws and the chains stuck more than with 64: there the sd of log p~ (N_imp 64)
        was 0.41 at the mode but 1.1 where the chain stuck, and 0.37 with N_imp 256 at the mode (not
        the 0.21 of c / N); correlated moves (``rho = 0.9``) helped, a larger N_imp did not.
    proposal_cov : (p, p) array or None, default None
        The starting proposal covariance of the adaptive phase; None: 0.1 I.
    target_accept : float, default 0.25
        Acceptance rate the adaptive phase tunes the proposal scale towards (F&G: 20-30 %).
    adapt_on : {"laplace", "ep"}, default "laplace"
        The deterministic approximate posterior the adaptive phase runs on (F&G: Laplace).
    initial_scale : float or None, default None
        The proposal's first scale; None: 2.38 / sqrt(p).
    adapt_covariance : bool, default True
        Re-estimate the proposal covariance during the adaptive phase (when p > 1).
    rho : float in [0, 1), default 0.0
        Correlated pseudo-marginal MH (Deligiannidis, Doucet & Pitt 2018): the standard normals
        behind the importance draws are part of the state and move by a Crank-Nicolson step
        with correlation ``rho``; 0 is F&G's Alg. 1 (fresh normals at every proposal).
    init : {"kernel", "prior"}, default "kernel"
        Where each chain starts, drawn from the chain's own generator: the kernel's initial psi
        plus N(0, 0.1^2) noise, or a draw of the model's prior (F&G Sec. 4.2: "The chains were
        initialized from the prior").
    ep_stopping : {"logz", "fg2014"}, default "logz"
        EP's stopping rule in the importance density when ``approximation="ep"``
        (``gpbayes.approx.ep``): the change of log Z_EP, or F&G Sec. 4's squared change of the EP
        mean below n / 10^4 (the rule of their Table II operation counts).
    """

    approximation: str = "laplace"
    n_imp: Any = 64
    proposal_cov: Any = None
    target_accept: float = 0.25
    adapt_on: str = "laplace"
    initial_scale: float | None = None
    adapt_covariance: bool = True
    rho: float = 0.0
    init: str = "kernel"
    ep_stopping: str = "logz"

    aliases: ClassVar = {"pseudo-marginal": {}}
    stoppable: ClassVar = True
    independent_chains: ClassVar = True
    #: the pilot N_imp of ``n_imp="auto"`` (``choose_n_imp``'s first round): F&G's N_imp
    n_imp_pilot: ClassVar[int] = 64
    library: ClassVar = {f: _lazy("mcmc.pseudo_marginal", "run_chain")
                         for f in ("target_accept", "adapt_on", "initial_scale", "adapt_covariance", "rho")}
    own_defaults: ClassVar = {
        "approximation": "F&G's Laplace importance density; PseudoMarginalTarget's default is the same",
        "n_imp": "F&G's N_imp = 64 (PseudoMarginalTarget's default 1 is the bare estimator); 'auto' is opt-in",
        "proposal_cov": "None means 0.1 I, the starting proposal of the adaptive phase (dimension-dependent)",
        "init": _INIT_REASON,
        "ep_stopping": "gpbayes.approx.ep's default rule (stopping='logz'); F&G's 'fg2014' is opt-in"}

    def __post_init__(self):
        _choice(self, "approximation", _APPROXIMATIONS)
        if self.n_imp != "auto":
            v = self.n_imp
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
                raise ValueError(f"{_name(self, 'n_imp')} must be an integer >= 1, got {v!r} (or 'auto': "
                                 f"chosen per chain by estimators.importance.choose_n_imp)")
            object.__setattr__(self, "n_imp", int(v))
        _matrix(self, "proposal_cov")
        _float(self, "target_accept", 0.0, 1.0)
        _choice(self, "adapt_on", _APPROXIMATIONS)
        _float(self, "initial_scale", 0.0, optional=True)
        _bool(self, "adapt_covariance")
        _float(self, "rho", 0.0, 1.0, open_low=False)
        _choice(self, "init", _INITS)
        _choice(self, "ep_stopping", ("logz", "fg2014"))

    def _target(self, model, n_imp: int):
        """F&G eq. 25's estimator with ``n_imp`` draws (EP's stopping rule ``ep_stopping``)."""
        options = {"stopping": self.ep_stopping} if self.approximation == "ep" else {}
        return _pm_target(model, self.approximation, n_imp, approx_options=options)

    def why_not(self, model):
        """Also refused: a PoissonGP with per-bin exposure (the importance estimator takes a scalar),
        and an ``approximation`` the likelihood does not offer (``Likelihood.approximations``)."""
        return super().why_not(model) or _estimator_problem(model, self.approximation)

    def check(self, model):
        """Stop with the option's own message when the model fits but the option does not
        (an approximation the likelihood lacks); otherwise as :meth:`Method.check`."""
        _check_option_first(self, model)

    def run(self, model, rngs, *, n_draws, n_warmup, callback=None, stop=None):
        """F&G Sec. 4.4 per chain: ``pseudo_marginal.run_chain`` with no kept draw runs the adaptive
        phase and makes the first importance estimate (the frozen proposal and that state are its
        result); the frozen PM-MH kernels then run as chain specifications of the one runner (so
        ``until_converged`` applies).  Each chain's generator sees the same draws in the same order
        as in one ``pseudo_marginal.run_chain`` call, so the chains are the same."""
        from ..mcmc import pseudo_marginal, random_walk

        auto = self.n_imp == "auto"
        preps, specs = [], []
        try:
            for c, r in enumerate(rngs):
                psi0 = self._psi0(model, r, c)
                target = self._target(model, self.n_imp_pilot if auto else self.n_imp)
                cov = 0.1 * np.eye(psi0.size) if self.proposal_cov is None else np.array(self.proposal_cov)
                failures0 = getattr(target, "n_failures", 0)
                prep = pseudo_marginal.run_chain(r, target, psi0, n_adapt=n_warmup, n_burn=0, n_draws=0,
                                                 proposal_cov=cov, target_accept=self.target_accept,
                                                 adapt_on=self.adapt_on, initial_scale=self.initial_scale,
                                                 adapt_covariance=self.adapt_covariance, rho=self.rho)
                factor = prep.params["proposal_factor"]
                if auto:
                    prep, target = self._auto_n_imp(model, r, prep, target, factor)
                if isinstance(prep.state, pseudo_marginal.PMState):  # the importance estimator's state
                    kernel = lambda rr, st, t=target, L=factor: pseudo_marginal.step(rr, st, t, L, self.rho)
                else:
                    kernel = lambda rr, st, t=target, L=factor: random_walk.step(rr, st, t, L)
                specs.append(runner.ChainSpec(prep.state, kernel, 0))
                preps.append((prep, target, failures0))
        except KeyboardInterrupt:
            raise runner.Interrupted([]) from None  # in an adaptive phase: no kept draw yet

        def finish(chains):  # the adaptive phase's cost and tuning, as pseudo_marginal.run_chain reports them
            return [dataclasses.replace(c, warmup=p.warmup, params={
                **p.params, "n_failures": int(getattr(t, "n_failures", 0) - f0)}) for c, (p, t, f0) in
                zip(chains, preps)]

        try:
            return finish(run_specs(rngs, specs, n_draws=n_draws, callback=callback, stop=stop))
        except runner.Interrupted as err:
            raise runner.Interrupted(finish(err.chains)) from None

    def _auto_n_imp(self, model, rng, prep, pilot, factor):
        """``n_imp="auto"``: choose N_imp (``choose_n_imp``, from the chain's generator) at the mode of
        the deterministic approximate posterior that the adaptive phase ran on, found by L-BFGS-B
        (finite differences) from the adaptive phase's end point (that end point where the climb
        fails); with rho > 0 against one proposal psi + L z from the mode (against the mode itself where
        the estimate fails there: ``n_imp_ratio_at_proposal`` False).  Phase 2 then starts at the
        end point, as for a fixed N_imp, with a fresh estimate of the chosen size.  Returns
        (prep, target) with the choice in prep's params; the climb's, the measurement's and the
        first estimate's O(n^3) operations are added to the warm-up's."""
        import time

        from scipy import optimize

        from ..estimators.importance import choose_n_imp
        from ..mcmc import pseudo_marginal

        start = np.asarray(prep.state.position, dtype=np.float64)
        t0, w0 = time.process_time(), time.perf_counter()
        det = pilot.deterministic_log_density(reject_failures=True)

        def objective(x):  # minus the deterministic approximate log posterior; a huge value where it fails
            v = det(x)
            return -v if np.isfinite(v) else 1e300

        with linalg.count_ops() as ops:
            # the approximate posterior's mode, climbed to from the adaptive phase's end point (no draw)
            lp0 = det(start)
            res = optimize.minimize(objective, start, method="L-BFGS-B", options={"maxiter": 100})
            found = bool(np.isfinite(res.fun) and res.fun < 1e300 and -res.fun >= lp0)
            psi = np.asarray(res.x, dtype=np.float64) if found else start
            psi_proposed = psi + factor @ rng.standard_normal(psi.size) if self.rho > 0.0 else None
            try:
                choice = choose_n_imp(pilot, psi, rng, rho=self.rho, psi_proposed=psi_proposed,
                                      n_pilot=self.n_imp_pilot)
            except (ValueError, np.linalg.LinAlgError, FloatingPointError):
                if psi_proposed is None:
                    raise
                # the proposal from the mode is numerically out of reach: the log-ratio at the mode itself
                psi_proposed = None
                choice = choose_n_imp(pilot, psi, rng, rho=self.rho, n_pilot=self.n_imp_pilot)
            target = self._target(model, choice.n_imp)
            target.n_failures = pilot.n_failures
            state = pseudo_marginal.init(start, target, rng)
        cpu = time.process_time() - t0
        warmup = {**prep.warmup, "n_cubic": int(prep.warmup.get("n_cubic", 0) + ops.cubic)}
        if "wall_time" in warmup:
            warmup["wall_time"] = float(warmup["wall_time"] + time.perf_counter() - w0)
        params = {**prep.params, "init_log_density": float(state.log_density), "n_imp": int(choice.n_imp),
                  "n_imp_sd_log_estimate": choice.sd_log_estimate, "n_imp_sd_log_ratio": choice.sd_log_ratio,
                  "n_imp_pilot_sd": float(choice.measured[0][1]), "n_imp_rounds": len(choice.measured),
                  "n_imp_c_ratio": choice.c_ratio, "n_imp_time": float(cpu), "n_imp_n_cubic": int(ops.cubic),
                  "n_imp_psi": psi.copy(), "n_imp_at_mode": found,
                  "n_imp_ratio_at_proposal": psi_proposed is not None}
        return dataclasses.replace(prep, state=state, warmup=warmup, params=params), target


@dataclasses.dataclass(frozen=True)
class _LatentNUTS(_Latent, register=False):
    """The NUTS options shared by the gradient-based latent-model methods (``nuts.chain_spec``'s):
    ``max_tree_depth`` (10), ``target_accept`` (None: 0.8) and ``mass_adaptation`` ("diagonal")."""

    max_tree_depth: int = 10
    target_accept: float | None = None
    mass_adaptation: str = "diagonal"

    stoppable: ClassVar = True
    independent_chains: ClassVar = True
    library: ClassVar = {f: _lazy("mcmc.nuts", "chain_spec") for f in ("max_tree_depth", "target_accept",
                                                                       "mass_adaptation")}

    def __post_init__(self):
        _int(self, "max_tree_depth", 1)
        _float(self, "target_accept", 0.0, 1.0, optional=True)
        _choice(self, "mass_adaptation", ("diagonal", "dense"))

    def _nuts_options(self) -> dict:
        return {"max_tree_depth": self.max_tree_depth, "target_accept": self.target_accept,
                "mass_adaptation": self.mass_adaptation}


@dataclasses.dataclass(frozen=True)
class ISCorrectedNUTS(_LatentNUTS):
    """NUTS on an approximate posterior with an importance-sampling correction to the exact one
    (Vihola, Helske & Franks 2020; ``gpbayes.mcmc.is_corrected``): an exact method that uses gradients.

    The chain targets p(psi) q(y | psi), q the ``approximation``'s marginal with its analytic gradient
    (EP: log Z_EP, R&W eq. 5.27; Laplace: R&W eq. 3.32 and Alg. 5.1), by Stan's NUTS and warm-up
    (``gpbayes.mcmc.nuts``); every kept draw carries the log weight log p~(y | psi) - log q(y | psi) of
    one unbiased estimate p~ (F&G eq. 25, ``n_imp`` draws from the same Gaussian approximation), in
    ``sample_stats["log_weight"]``.  Weighted averages are consistent for the exact posterior;
    ``gb.summary`` reports them with their Monte Carlo error and effective sample size
    (``diagnostics.importance_corrected_summary``), and ``until_converged`` judges that ESS.  The
    ``posterior`` group holds the chain's (approximate, unweighted) draws.

    Parameters
    ----------
    n_imp : int, default 64
        Importance draws per weight (F&G's N_imp).
    approximation : {"laplace", "ep"} or None, default None
        The approximate marginal the chain runs on and the importance density of the weights; None:
        EP where the likelihood offers it (the probit), else Laplace.  EP is the closer one for the
        probit (F&G Sec. 2.1.2), which is what keeps the weights even: on Ionosphere ARD (n = 351, 34
        hyperparameters) a chain on the Laplace marginal kept 3 % of its draws' information after
        weighting (Kish), with EP weights, and 0 % with Laplace weights.
    max_tree_depth : int, default 10
        At most 2^max_tree_depth leapfrog steps per transition.
    target_accept : float or None, default None
        Dual-averaging target (None: 0.8, Stan's and NumPyro's).
    mass_adaptation : {"diagonal", "dense"}, default "diagonal"
        What Stan's windowed warm-up estimates of the inverse mass matrix.
    """

    n_imp: int = 64
    approximation: str | None = None

    aliases: ClassVar = {"nuts-is": {}}
    #: the per-draw statistic ``until_converged`` weighs the draws by (``runner.StopRule.weights``)
    log_weight_stat: ClassVar[str] = "log_weight"
    own_defaults: ClassVar = {"n_imp": "F&G's N_imp = 64, as gb.PseudoMarginal (PseudoMarginalTarget's default 1 "
                                       "is the bare estimator)",
                              "approximation": "None: EP where the likelihood offers it, else Laplace (the API's "
                                               "choice of approximate marginal and importance density)"}

    def __post_init__(self):
        super().__post_init__()
        _int(self, "n_imp", 1)
        _choice(self, "approximation", _APPROXIMATIONS, optional=True)

    def why_not(self, model):
        """Also refused: a PoissonGP with per-bin exposure (the importance estimator takes a scalar),
        and an ``approximation`` the likelihood does not offer."""
        return super().why_not(model) or _estimator_problem(model, self.approximation)

    def check(self, model):
        """Stop with the option's own message when the model fits but the option does not."""
        _check_option_first(self, model)

    def importance_density(self, model) -> str:
        """The approximation the chain runs on and the weights use: ``approximation``, or EP where
        offered, else Laplace."""
        if self.approximation is not None:
            return self.approximation
        return "ep" if "ep" in model.likelihood.approximations else "laplace"

    def chain_specs(self, model, rngs, n_warmup):
        """Per chain, ``is_corrected.chain_spec`` from psi_0 = the kernel's initial psi plus N(0, 0.1^2)
        noise, with its own approximate log posterior (and warm start) and importance estimator."""
        from ..estimators.importance import PseudoMarginalTarget
        from ..mcmc import is_corrected

        if n_warmup == 0:
            raise ValueError("nuts-is needs a warm-up to tune its step size: give n_warmup >= 1")
        approx = self.importance_density(model)
        specs = []
        for c, r in enumerate(rngs):
            psi0 = self._psi0(model, r, c)
            logpost = is_corrected.ApproximateLogPosterior(model.kernel, model.X, model.y, model.likelihood,
                                                           model.prior, approximation=approx)
            est = PseudoMarginalTarget(model.X, model.y, model.kernel, model.likelihood, model.prior,
                                       approx=approx, n_imp=self.n_imp, warm_start=True)
            specs.append(is_corrected.chain_spec(psi0, logpost, est, n_adapt=n_warmup, **self._nuts_options()))
        return specs

    def to_groups(self, model, result, rngs, attrs):
        """:func:`posterior_groups`, with the importance density used recorded in the attributes
        (``importance_density``: ``"laplace"`` or ``"ep"``)."""
        return posterior_groups(model, result, {**attrs, "importance_density": self.importance_density(model)})


@dataclasses.dataclass(frozen=True)
class WhitenedNUTS(_LatentNUTS):
    """NUTS on the hyperparameters and the whitened latent values jointly (``gpbayes.mcmc.whitened_nuts``):
    the exact posterior p(psi, v | y) with f = L_psi v (Murray & Adams 2010 eq. 5, the prior-whitened
    representation; the non-centred parameterisation NumPyro and Stan use), no approximation and no
    weights.

    One value and gradient costs 1 Cholesky, 1 triangular inverse and 1 triangular product (the
    Cholesky factor's reverse mode, Murray 2016, with a rank-one adjoint).  The chain moves n + p
    coordinates, so it needs more leapfrog steps per draw than ``nuts-is`` (p coordinates); it
    wins where the importance weights of ``nuts-is`` are uneven (many latent values under a strong
    posterior: Ionosphere ARD, n = 351, 34 hyperparameters).  Each chain starts at psi_0 (the
    kernel's initial psi plus N(0, 0.1^2) noise) and v_0 = L_psi0^-1 f_hat, f_hat the Laplace mode at
    psi_0 (v_0 = 0 where Newton's method fails).  ``posterior["f"]`` holds f = L_psi v per draw.

    Parameters
    ----------
    max_tree_depth : int, default 10
        At most 2^max_tree_depth leapfrog steps per transition.
    target_accept : float or None, default None
        Dual-averaging target (None: 0.8, Stan's and NumPyro's).
    mass_adaptation : {"diagonal", "dense"}, default "diagonal"
        What Stan's windowed warm-up estimates of the inverse mass matrix (n + p coordinates: dense
        costs O((n + p)^2) per leapfrog step).
    """

    aliases: ClassVar = {"nuts-whitened": {}}
    _keeps_latent: ClassVar[bool] = True

    @staticmethod
    def _f_hat(model, psi0) -> np.ndarray:
        """The Laplace mode at psi0 (zeros where Newton's method fails)."""
        from ..approx import ConvergenceWarning
        from ..approx.laplace import laplace_approximation

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                K = model.kernel(psi0, model.X)
                return np.asarray(laplace_approximation(K, model.y, model.likelihood, targets_checked=True).m)
        except (np.linalg.LinAlgError, FloatingPointError, ValueError):
            return np.zeros(model.n)

    def chain_specs(self, model, rngs, n_warmup):
        """Per chain, ``whitened_nuts.chain_spec`` from [psi_0, L_psi0^-1 f_hat] (the class docstring)."""
        from ..mcmc import whitened_nuts

        if n_warmup == 0:
            raise ValueError("nuts-whitened needs a warm-up to tune its step size: give n_warmup >= 1")
        specs = []
        for c, r in enumerate(rngs):
            psi0 = self._psi0(model, r, c)
            target = whitened_nuts.WhitenedJointPosterior(model.kernel, model.X, model.y, model.likelihood,
                                                          model.prior)
            x0 = whitened_nuts.whitened_start(target, psi0, self._f_hat(model, psi0))
            specs.append(whitened_nuts.chain_spec(x0, target, n_adapt=n_warmup, **self._nuts_options()))
        return specs


@dataclasses.dataclass(frozen=True)
class LatentGibbs(_Latent):
    """F&G's Gibbs baselines (Sec. 4.2): MH on psi in the ``representation`` ``"aa"`` (whitened latent
    variables, Murray & Adams' ancillary augmentation) or ``"surr"`` (surrogate data, M&A eqs. 9-11)
    alternating with ``n_latent_updates`` elliptical slice updates of f (Murray et al. 2010); the MH
    scale tuned towards ``target_accept`` (Robbins-Monro, from ``initial_scale``) in warm-up.
    ``keep_latent`` stores f per draw (always on a :class:`~gpbayes.models.LatentGP`).  On a LatentGP with
    ``sample_offset=True`` psi's last coordinate is the constant m of f (M&A Sec. 5), moved by the same
    MH update with the representation's auxiliaries held fixed.

    Parameters
    ----------
    representation : {"aa", "surr"}, default "aa"
        Where the MH update of psi holds the latent values fixed: whitened (AA) or
        surrogate data (SURR).  The aliases "aa" and "surr" fix it.
    n_latent_updates : int, default 10
        Elliptical slice updates of f after each psi update.
    target_accept : float, default 0.25
        Acceptance rate the MH scale is tuned towards in warm-up.
    initial_scale : float or None, default None
        The first MH scale; None: 2.38 / sqrt(p).
    keep_latent : bool, default False
        Store f per draw in ``posterior["f"]`` (n floats per draw; needed by
        ``posterior_predictive``/``log_likelihood`` of latent models and ``az.loo``).
        A LatentGP keeps f whatever this says.
    init : {"kernel", "prior"}, default "kernel"
        Where each chain starts, drawn from the chain's own generator: psi_0 the kernel's initial
        psi plus N(0, 0.1^2) noise, or a draw of the model's prior (F&G Sec. 4.2); then
        f_0 ~ N(0, K(psi_0)).  ``gb.sample(..., init=...)`` gives psi_0 (and f_0) instead.
    """

    representation: str = "aa"
    n_latent_updates: int = 10
    target_accept: float = 0.25
    initial_scale: float | None = None
    keep_latent: bool = False
    init: str = "kernel"

    aliases: ClassVar = {"aa": {"representation": "aa"}, "surr": {"representation": "surr"}}
    init_components: ClassVar = ("psi", "f")
    takes_offset: ClassVar[bool] = True
    stoppable: ClassVar = True
    independent_chains: ClassVar = True
    library: ClassVar = {f: _lazy("mcmc.latent_gibbs", "chain_spec")
                         for f in ("n_latent_updates", "target_accept", "initial_scale")}
    library_names: ClassVar = {"representation": "method"}
    own_defaults: ClassVar = {
        "representation": "no default in the library (latent_gibbs.chain_spec's method='aa' is the same)",
        "keep_latent": "the API does not store f per draw unless asked (n floats per draw); "
                       "latent_gibbs.chain_spec keeps it by default",
        "init": _INIT_REASON}

    def __post_init__(self):
        _choice(self, "representation", ("aa", "surr"))
        _int(self, "n_latent_updates", 1)
        _float(self, "target_accept", 0.0, 1.0)
        _float(self, "initial_scale", 0.0, optional=True)
        _bool(self, "keep_latent")
        _choice(self, "init", _INITS)

    def keeps_latent(self, model) -> bool:
        """``keep_latent``, or a :class:`~gpbayes.models.LatentGP` (whose results always hold f)."""
        return self.keep_latent or isinstance(model, LatentGP)

    def chain_specs(self, model, rngs, n_warmup):
        """Per chain, ``latent_gibbs.chain_spec`` (F&G Sec. 4.2) from psi_0 = the kernel's initial psi
        plus N(0, 0.1^2) noise and f_0 ~ N(0, K(psi_0))."""
        from ..mcmc import latent_gibbs

        specs = []
        for c, r in enumerate(rngs):
            psi0 = self._psi0(model, r, c)
            lgm = self._lgm(model)
            f0 = self._f0(model, psi0, r, c)
            specs.append(latent_gibbs.chain_spec(lgm, psi0, f0, method=self.representation, n_burn=n_warmup,
                                                 n_latent_updates=self.n_latent_updates,
                                                 target_accept=self.target_accept, initial_scale=self.initial_scale,
                                                 keep_latent=self.keeps_latent(model)))
        return specs


_REPRESENTATIONS = hyper_slice.METHODS  # fixed, prior-white, surr-site, surr-taylor, post-site, post-taylor


@dataclasses.dataclass(frozen=True)
class SliceSampler(_Latent):
    """Murray & Adams' slice sampling of the hyperparameters (their Alg. 4) in a ``representation``:
    ``"fixed"`` (f held fixed), ``"prior-white"`` (whitened by the prior, eq. 5), ``"surr-site"`` /
    ``"surr-taylor"`` (surrogate data, eqs. 9-11, noise from site moments or a Taylor fit, eqs. 12-13),
    ``"post-site"`` / ``"post-taylor"`` (the approximate posterior's whitening, eq. 14), each sweep
    followed by ``n_latent_updates`` elliptical slice updates of f; widths from the prior.  On a
    :class:`~gpbayes.models.LatentGP` with ``sample_offset=True`` the sweep also slice-samples the
    constant m of f, psi's last coordinate, as M&A Sec. 5 do on the Cox-process data ("fixed": target
    eq. 4 times L(f + m); the others: their eq. 6 / 11 / 14 with the likelihood at f + m).

    Parameters
    ----------
    representation : str, default "surr-site"
        One of "fixed", "prior-white", "surr-site", "surr-taylor", "post-site", "post-taylor": the
        representation of (theta, f) in which theta is slice-sampled; the aliases
        "slice-<representation>" fix it.
    n_latent_updates : int, default 10
        Elliptical slice updates of f after each slice sweep of theta.
    init : {"kernel", "prior"}, default "kernel"
        Where each chain starts, drawn from the chain's own generator: psi_0 the kernel's initial
        psi plus N(0, 0.1^2) noise, or a draw of the model's prior; then f_0 ~ N(0, K(psi_0)).
        ``gb.sample(..., init=...)`` gives psi_0 (and f_0) instead: nothing is drawn for them.
    keep_latent : bool, default False
        Store f per draw in ``posterior["f"]`` (n floats per draw; for ``log_likelihood`` /
        ``az.loo`` and the posterior predictive draws of the latent models).  A LatentGP keeps f
        whatever this says.  Recording f draws nothing: the chains are the same either way.
    """

    representation: str = "surr-site"
    n_latent_updates: int = 10
    init: str = "kernel"
    keep_latent: bool = False

    aliases: ClassVar = {f"slice-{r}": {"representation": r} for r in _REPRESENTATIONS}
    init_components: ClassVar = ("psi", "f")
    takes_offset: ClassVar[bool] = True
    stoppable: ClassVar = True
    independent_chains: ClassVar = True
    library: ClassVar = {"n_latent_updates": _lazy("mcmc.hyper_slice", "chain_spec")}
    own_defaults: ClassVar = {"representation": "M&A's recommended surrogate-data representation; "
                                                "hyper_slice.chain_spec has no default",
                              "init": _INIT_REASON,
                              "keep_latent": "the API does not store f per draw unless asked (n floats per draw); "
                                             "hyper_slice.chain_spec records none"}

    def __post_init__(self):
        _choice(self, "representation", _REPRESENTATIONS)
        _int(self, "n_latent_updates", 1)
        _choice(self, "init", _INITS)
        _bool(self, "keep_latent")

    def keeps_latent(self, model) -> bool:
        """``keep_latent``, or a :class:`~gpbayes.models.LatentGP` (whose results always hold f)."""
        return self.keep_latent or isinstance(model, LatentGP)

    def chain_specs(self, model, rngs, n_warmup):
        """Per chain, ``hyper_slice.chain_spec`` (M&A Alg. 4) from psi_0 = the kernel's initial psi
        plus N(0, 0.1^2) noise and f_0 ~ N(0, K(psi_0))."""
        specs = []
        for c, r in enumerate(rngs):
            psi0 = self._psi0(model, r, c)
            lgm = self._lgm(model)
            f0 = self._f0(model, psi0, r, c)
            spec = hyper_slice.chain_spec(lgm, psi0, f0, self.representation, n_burn=n_warmup,
                                          n_latent_updates=self.n_latent_updates)
            if self.keeps_latent(model):  # f recorded beside log L(f): nothing else changes
                spec = dataclasses.replace(spec, record=lambda st, info: {"log_likelihood": st.log_likelihood,
                                                                          "f": st.f})
            specs.append(spec)
        return specs


@dataclasses.dataclass(frozen=True)
class EPML(Method):
    """EP type-II maximum likelihood (a point estimate, one "draw"): log Z_EP (R&W eq. 3.65)
    maximised over psi (F&G Sec. 3.2); the probit's.

    It has no options (the optimiser's settings are those of ``classification.fit_ep_type2_ml``).
    """

    aliases: ClassVar = {"ep-ml": {}}
    models: ClassVar = (GPClassifier,)

    def why_not(self, model):
        """Also refused: a likelihood that does not offer EP (``Likelihood.approximations``)."""
        reason = super().why_not(model)
        if reason is None and "ep" not in model.likelihood.approximations:
            return (f"method 'ep-ml' needs a likelihood that offers EP (the probit, or one that lists it), not "
                    f"{model.likelihood.name}")
        return reason

    def run(self, model, rngs, *, n_draws, n_warmup, callback=None, stop=None):
        """log Z_EP (R&W eq. 3.65) maximised over psi (``classification.fit_ep_type2_ml``), one draw."""
        from ..classification import fit_ep_type2_ml

        fit = fit_ep_type2_ml(model.X, model.y, model.kernel, rngs[0], likelihood=model.likelihood)
        return _point(fit.psi, fit.log_marginal)
