"""Gibbs samplers for (f, psi) | y: MH on psi in a representation, then ELL-SS on f.

These are the AA and SURR baselines of Filippone & Girolami 2014 (Sec. 3.2,
4.3): "we alternated the sampling of theta using the MH algorithm and the
sampling of f iterating ELL-SS ten times".  One Gibbs iteration is

1. a psi-update that holds the auxiliary variables of a representation
   fixed (``gpbayes.representations``) and moves psi by random-walk MH in
   psi = log theta space (``mcmc.random_walk.step``); f moves with psi:

   * ``aa`` (Murray & Adams 2010, Alg. 2): step 1 nu = L_psi^-1 f;
     step 2 propose psi'; step 3 f' = L_psi' nu; steps 4-5 accept with
     probability min(1, L(f') p_h(psi') / (L(f) p_h(psi)));
   * ``surr`` (Murray & Adams 2010, Alg. 3): step 1 draw g ~ N(f, S_psi);
     step 2 eta = L_R^-1 (f - m_psi,g); step 3 propose psi';
     step 4 f' = L_R' eta + m_psi',g; steps 5-6 accept with probability
     min(1, L(f') N(g; 0, Sigma' + S') p_h(psi') / (L(f) N(g; 0, Sigma + S) p_h(psi)));

2. ``n_latent_updates`` elliptical slice sampling updates of f | psi, y
   (``mcmc.elliptical_slice``; F&G use 10).

Cost (O(n^3) operations, counted by ``linalg.count_ops``).  The state keeps
the factors of the current psi, so only the proposal is factorised:

* AA:   1 per psi-update (chol Sigma_psi');  F&G Table II: 1.0.
* SURR: 3 per psi-update (chol Sigma_psi', the product L^T S^-1 L,
  chol(I + L^T S^-1 L)); F&G Table II: 3.0.
* ELL-SS: 0 (matrix-vector products with the stored factor).

A proposal outside the prior's support costs 0 (it is rejected before any
factorisation); each failed Cholesky attempt of the jitter retry adds 1
(reported separately as ``n_failed_cholesky``; subtract it to compare with
F&G Table II, whose counts assume every factorisation succeeds at once).
Jitter is needed when Sigma_psi is numerically singular, e.g. long
lengthscales on n = 200 inputs: on such data AA averaged about 2 and SURR
about 4 counted operations per iteration, 1 and 3 without the retries.

The state is tied to the data ``model.y`` it was built for (it stores
log L(f) and, for SURR, S_psi, which depends on y for the Poisson); after
changing the data build a new state with ``init``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .. import linalg
from .. import representations as rep
from . import adaptation, elliptical_slice, random_walk, runner
from .runner import Chain

__all__ = [
    "METHODS",
    "LatentGibbsState",
    "ThetaInfo",
    "GibbsInfo",
    "init",
    "aa_theta_step",
    "surr_theta_step",
    "latent_step",
    "step",
    "chain_spec",
    "run_chain",
]

METHODS = ("aa", "surr")


class LatentGibbsState(NamedTuple):
    """State of F&G's AA/SURR Gibbs samplers: psi, the latent f, log L(f), log p(psi), the prior's
    Cholesky factor at psi and, for SURR, the surrogate factors (M&A Sec. 3).
    """

    psi: np.ndarray  # log-hyperparameters
    f: np.ndarray  # latent values
    log_likelihood: float  # log L(f)
    log_prior: float  # log p_h(psi) on the log scale
    chol_prior: np.ndarray  # L with L L^T = Sigma_psi
    surrogate: rep.SurrogateFactors | None = None  # SURR factors at psi, if built


class ThetaInfo(NamedTuple):
    """What one MH update of psi (in the AA or SURR representation) did and cost."""

    accepted: bool
    acceptance_prob: float
    n_cubic: int
    n_likelihood_evals: int
    n_failed_cholesky: int  # jitter retries, included in n_cubic


class GibbsInfo(NamedTuple):
    """What one Gibbs iteration did: the psi update's acceptance, and the cost of it and of the
    elliptical slice updates of f (O(n^3) operations, likelihood evaluations, shrinkages).
    """

    accepted: bool  # psi-update accepted
    acceptance_prob: float  # of the psi-update
    n_cubic: int  # whole iteration
    n_cubic_theta: int  # psi-update alone
    n_likelihood_evals: int  # psi-update + ELL-SS
    n_shrinkages: int  # summed over the ELL-SS updates
    n_failed_cholesky: int  # jitter retries, included in n_cubic


def _check_method(method: str) -> None:
    if method not in METHODS:
        raise ValueError(f"unknown psi-update {method!r}; choose one of {METHODS}")


def init(model: rep.LatentGaussianModel, psi, f, method: str = "aa") -> LatentGibbsState:
    """State at (psi, f): factorises Sigma_psi (and, for ``surr``, B)."""
    _check_method(method)
    psi = np.array(psi, dtype=np.float64)
    f = np.array(f, dtype=np.float64)
    if f.shape != (model.n,):
        raise ValueError(f"f must have shape ({model.n},), got {f.shape}")
    log_prior = model.log_prior(psi)
    if not math.isfinite(log_prior):
        raise ValueError(f"initial psi {psi} has zero prior density")
    log_lik = model.log_likelihood(psi, f)
    if not math.isfinite(log_lik):
        from ..likelihoods import _nonfinite_log_lik

        raise ValueError(_nonfinite_log_lik(model.likelihood_at(psi), model.y, f, log_lik))
    if method == "surr":
        factors = rep.surrogate_factors_at(model, psi)
        return LatentGibbsState(psi, f, log_lik, log_prior, factors.chol_prior, factors)
    return LatentGibbsState(psi, f, log_lik, log_prior, rep.prior_factor(model, psi))


def _mh_in_representation(rng, state, log_conditional, current_value, proposal_factor):
    """Random-walk MH on psi with ``log_conditional(psi) -> Evaluation``.

    ``random_walk.step`` evaluates the target exactly once, at the proposal;
    that Evaluation (f', factors) is kept to build the new state.
    """
    last: list[rep.Evaluation] = []

    def log_density(psi, _rng):
        ev = log_conditional(psi)
        last.append(ev)
        return ev.log_density

    rw_state = random_walk.RWMHState(state.psi, current_value)
    rw_state, rw_info = random_walk.step(rng, rw_state, log_density, proposal_factor)
    ev = last[-1]
    n_evals = int(ev.f is not None)
    if not rw_info.accepted:
        return state, rw_info, n_evals
    new = LatentGibbsState(
        rw_state.position, ev.f, ev.log_likelihood, ev.log_prior, ev.chol_prior, ev.surrogate
    )
    return new, rw_info, n_evals


def aa_theta_step(
    rng: np.random.Generator,
    state: LatentGibbsState,
    model: rep.LatentGaussianModel,
    proposal_factor: np.ndarray,
) -> tuple[LatentGibbsState, ThetaInfo]:
    """psi-update with the whitened latents nu fixed (M&A Alg. 2; F&G AA)."""
    with linalg.count_ops() as ops:
        # step 1: solve for the N(0, I) variate nu = L^-1 f
        nu = rep.whiten(state.chol_prior, state.f)
        # steps 2-5: propose psi', f' = L' nu, accept on L(f') p_h(psi')
        current = state.log_likelihood + state.log_prior
        new, rw_info, n_evals = _mh_in_representation(
            rng, state, lambda p: rep.whitened_log_conditional(model, p, nu), current, proposal_factor
        )
    return new, ThetaInfo(
        rw_info.accepted, rw_info.acceptance_prob, ops.cubic, n_evals, ops.failed_cholesky
    )


def surr_theta_step(
    rng: np.random.Generator,
    state: LatentGibbsState,
    model: rep.LatentGaussianModel,
    proposal_factor: np.ndarray,
) -> tuple[LatentGibbsState, ThetaInfo]:
    """psi-update with surrogate data g and whitened eta fixed (M&A Alg. 3; F&G SURR)."""
    with linalg.count_ops() as ops:
        factors = state.surrogate
        if factors is None:  # e.g. after an AA update: 2 extra O(n^3) operations
            factors = rep.surrogate_factors(state.chol_prior, model.site_noise(state.psi))
            state = state._replace(surrogate=factors)
        # step 1: draw surrogate data g ~ N(f, S_psi)
        g = rep.draw_surrogate_data(rng, state.f, factors.noise_var)
        # step 2: implied latent variates eta = L_R^-1 (f - m_psi,g)
        eta = rep.surrogate_whiten(factors, state.f, g)
        # steps 3-6: propose psi', f' = L_R' eta + m_psi',g, accept on
        # L(f') N(g; 0, Sigma' + S') p_h(psi')
        current = state.log_likelihood + rep.surrogate_log_marginal(factors, g) + state.log_prior
        new, rw_info, n_evals = _mh_in_representation(
            rng,
            state,
            lambda p: rep.surrogate_log_conditional(model, p, eta, g),
            current,
            proposal_factor,
        )
    return new, ThetaInfo(
        rw_info.accepted, rw_info.acceptance_prob, ops.cubic, n_evals, ops.failed_cholesky
    )


def latent_step(
    rng: np.random.Generator, state: LatentGibbsState, model: rep.LatentGaussianModel
) -> tuple[LatentGibbsState, elliptical_slice.EllipticalSliceInfo]:
    """One ELL-SS update of f | psi, y with the stored factor of Sigma_psi."""
    es = elliptical_slice.EllipticalSliceState(state.f, state.log_likelihood)
    if type(model).log_likelihood is rep.LatentGaussianModel.log_likelihood:
        # the model's log L(f) with psi's likelihood looked up once per update, not once per evaluation
        # (ELL-SS evaluates it ~7 times): the same sum of the same terms
        lik, y = model.likelihood_at(state.psi), model.y
        log_lik = lambda f: float(np.add.reduce(lik.log_lik(y, f)))  # noqa: E731
    else:
        log_lik = lambda f: model.log_likelihood(state.psi, f)  # noqa: E731
    es, info = elliptical_slice.step(rng, es, state.chol_prior, log_lik)
    return state._replace(f=es.position, log_likelihood=es.log_likelihood), info


_THETA_STEPS = {"aa": aa_theta_step, "surr": surr_theta_step}


def step(
    rng: np.random.Generator,
    state: LatentGibbsState,
    model: rep.LatentGaussianModel,
    proposal_factor: np.ndarray,
    *,
    method: str = "aa",
    n_latent_updates: int = 10,
) -> tuple[LatentGibbsState, GibbsInfo]:
    """One Gibbs iteration: a psi-update (``method``), then ``n_latent_updates`` ELL-SS."""
    _check_method(method)
    with linalg.count_ops() as ops:
        # step 1: hyperparameters, in the chosen representation
        state, t_info = _THETA_STEPS[method](rng, state, model, proposal_factor)
        # step 2: latent values given psi
        n_lik, n_shrink = t_info.n_likelihood_evals, 0
        for _ in range(n_latent_updates):
            state, e_info = latent_step(rng, state, model)
            n_lik += e_info.n_likelihood_evals
            n_shrink += e_info.n_shrinkages
    info = GibbsInfo(
        t_info.accepted, t_info.acceptance_prob, ops.cubic, t_info.n_cubic, n_lik, n_shrink,
        t_info.n_failed_cholesky,
    )
    return state, info


def run_chain(
    rng: np.random.Generator,
    model: rep.LatentGaussianModel,
    psi0,
    f0,
    *,
    method: str = "aa",
    n_burn: int,
    n_draws: int,
    proposal_cov: np.ndarray | None = None,
    n_latent_updates: int = 10,
    target_accept: float = 0.25,
    initial_scale: float | None = None,
    keep_latent: bool = True,
    thin: int = 1,
    callback=None,
) -> Chain:
    """Burn-in with proposal-scale adaptation, then ``n_draws`` kept iterations (a use of ``runner.run_chain``).

    The psi-proposal covariance is ``s^2 * proposal_cov`` (identity if
    None), ``s`` starting at ``initial_scale`` (default 2.38 / sqrt(p)) and
    adapted during burn-in by Robbins–Monro towards ``target_accept`` (F&G
    tuned to about 25%; ``adaptation.RandomWalkAdaptation`` without
    covariance updates), then frozen.  Returns a
    :class:`~gpbayes.mcmc.runner.Chain`: ``draws`` psi (n_draws, p); stats
    ``lp`` (log L(f) + log p_h(psi)), ``accepted``, ``acceptance_rate``,
    ``n_cubic``, ``n_cubic_theta``, ``n_likelihood``, ``n_shrinkages``,
    ``n_failed_cholesky``, ``wall_time``; ``extra`` ``log_likelihood``,
    ``log_prior`` and, with ``keep_latent``, ``f`` (n_draws, n);
    ``params["proposal_scale"]``; burn-in cost in ``warmup``.
    """
    spec = chain_spec(model, psi0, f0, method=method, n_burn=n_burn, proposal_cov=proposal_cov,
                      n_latent_updates=n_latent_updates, target_accept=target_accept, initial_scale=initial_scale,
                      keep_latent=keep_latent)
    return runner.run_spec(rng, spec, n_draws=n_draws, thin=thin, callback=callback)


def chain_spec(model: rep.LatentGaussianModel, psi0, f0, *, method: str = "aa", n_burn: int,
               proposal_cov: np.ndarray | None = None, n_latent_updates: int = 10, target_accept: float = 0.25,
               initial_scale: float | None = None, keep_latent: bool = True) -> runner.ChainSpec:
    """The runner configuration of one AA/SURR Gibbs chain (``runner.ChainSpec``; see :func:`run_chain`)."""
    state = init(model, psi0, f0, method)
    p = state.psi.shape[0]
    cov = np.eye(p) if proposal_cov is None else np.asarray(proposal_cov, dtype=float)

    def make_step(factor):
        return lambda r, st: step(r, st, model, factor, method=method, n_latent_updates=n_latent_updates)

    adapt = adaptation.RandomWalkAdaptation(make_step, cov, int(n_burn), target_accept=target_accept,
                                            initial_scale=initial_scale, adapt_covariance=False)

    def record(st, info):
        out = {"log_likelihood": st.log_likelihood, "log_prior": st.log_prior}
        if keep_latent:
            out["f"] = st.f
        return out

    return runner.ChainSpec(state, None, int(n_burn), adapt, position=lambda st: st.psi,
                            lp=lambda st: st.log_likelihood + st.log_prior, record=record)
