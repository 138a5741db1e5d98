"""Exact joint samplers of the supervised GPLVM (Gadd et al.'s model) on (psi, Z), Z whitened by its
prior (``gpbayes.gplvm.joint``): NUTS (``joint-nuts``) and Metropolis-within-Gibbs with moves along the
latent posterior's ring (``joint-gibbs``).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np

from ..models import GPLVMRegressor
from .base import Method, _bool, _choice, _float, _int, _lazy
from .gplvm import GPLVMPseudoMarginal

__all__ = ["GPLVMJointNUTS", "GPLVMJointGibbs"]


@dataclasses.dataclass(frozen=True)
class GPLVMJointNUTS(Method):
    """NUTS on the supervised GPLVM's joint posterior p(psi, Z | X, Y) (Gadd et al. eqs. 1-2 and their
    Gamma priors on psi), with Z = L_z(sigma) V whitened by its prior (the non-centred form of Murray &
    Adams 2010 eq. 5): exact, no estimator noise, no weights (``gpbayes.gplvm.joint``).

    The paper samples psi by pseudo-marginal MH with the importance-sampling estimate of eq. 6
    (``pm-within-gibbs``); on its own simulation (Sec. 6.1) that estimate is heavy-tailed and the chains
    stick.  This method samples the same posterior, so the psi draws answer the same questions.  One
    value and gradient costs five O(N^3) operations at N points (two Cholesky factors, the inverse of
    one, the two solves of the Cholesky adjoint).  The posterior keeps the model's mirror symmetries
    (a latent column's sign; the labels of the latent dimensions under equal priors): chains may visit
    them, so judge convergence on invariant quantities (``gpbayes.gplvm.joint.label_invariant``:
    max and min theta_j, sigma, theta_S, beta).

    Each chain starts at psi_0 = the type-II ML psi (``GPLVMRegressor.ml_fit``) plus
    N(0, ``start_noise_sd``^2) noise, or at the psi given to ``gb.sample(..., init={"psi": ...})``
    (with ``"Z"`` as well, the latent start), and Z_0 = the ML fit's q(Z) mean at psi_0.
    ``posterior["Z"]`` holds Z per kept draw over ``(obs, latent)``.

    Parameters
    ----------
    max_tree_depth : int, default 10
        At most 2^max_tree_depth leapfrog steps per transition.
    target_accept : float or None, default None
        Dual-averaging target (None: 0.8, Stan's and NumPyro's).
    mass_adaptation : {"diagonal", "dense"}, default "diagonal"
        What Stan's windowed warm-up estimates of the inverse mass matrix (p + N k_z coordinates).
    start_noise_sd : float, default 0.1
        Chains start at the type-II ML psi plus N(0, start_noise_sd^2) noise on the log scale.
    rotations : bool, default False
        After each NUTS transition, rotate every pair of latent columns of V by phi ~ U(0, 2 pi), accepted
        with the joint target's ratio (``gplvm.joint.rotate_latent``; k_z >= 2): the jump along the ring of
        nearly equivalent latent configurations that NUTS follows only with many leapfrog steps.  The
        warm-up (step size, mass matrix) is NUTS's own; the composition leaves the posterior invariant.
    """

    max_tree_depth: int = 10
    target_accept: float | None = None
    mass_adaptation: str = "diagonal"
    start_noise_sd: float = 0.1
    rotations: bool = False

    aliases: ClassVar = {"joint-nuts": {}}
    models: ClassVar = (GPLVMRegressor,)
    init_components: ClassVar = ("psi", "Z")
    stoppable: ClassVar = True
    independent_chains: ClassVar = True
    library: ClassVar = {**{f: _lazy("mcmc.nuts", "chain_spec") for f in ("max_tree_depth", "target_accept",
                                                                          "mass_adaptation")},
                         "rotations": _lazy("gplvm.joint", "chain_spec")}
    own_defaults: ClassVar = {"start_noise_sd": "API over-dispersion of starts, as pm-within-gibbs's"}

    def __post_init__(self):
        _int(self, "max_tree_depth", 1)
        _float(self, "target_accept", 0.0, 1.0, optional=True)
        _choice(self, "mass_adaptation", ("diagonal", "dense"))
        _float(self, "start_noise_sd", 0.0, open_low=False)
        _bool(self, "rotations")

    def chain_specs(self, model, rngs, n_warmup):
        """Per chain, ``gplvm.joint.chain_spec`` from [psi_0, L_z(psi_0)^-1 Z_0] (the class docstring)."""
        from ..gplvm import joint

        if n_warmup == 0:
            raise ValueError("joint-nuts needs a warm-up to tune its step size: give n_warmup >= 1")
        options = {"max_tree_depth": self.max_tree_depth, "target_accept": self.target_accept,
                   "mass_adaptation": self.mass_adaptation}
        specs = []
        for c, r in enumerate(rngs):
            psi0, Z0 = _joint_start(self, model, r, c)
            target = joint.GPLVMJointPosterior(model.gplvm, model.prior)
            x0 = joint.joint_start(target, psi0, Z0)
            specs.append(joint.chain_spec(x0, target, n_adapt=n_warmup, rotations=self.rotations, **options))
        return specs

    # the hyperparameter groups plus the latent Z per draw over (chain, draw, obs, latent), as the paper's sampler
    to_groups = GPLVMPseudoMarginal.to_groups


@dataclasses.dataclass(frozen=True)
class GPLVMJointGibbs(Method):
    """Metropolis-within-Gibbs on the supervised GPLVM's joint posterior p(psi, Z | X, Y), Z = L_z(sigma) V
    (``gpbayes.gplvm.joint.gibbs_step``): per iteration ``n_ess`` elliptical slice updates of V (Gadd et
    al.'s Alg. 3 in whitened coordinates), random-walk MH on psi with V fixed (proposal adapted in
    warm-up), MH on log sigma with Z fixed, univariate slice sampling of each psi coordinate given Z
    (Neal 2003), the likelihood-free scale moves (v_:,j, theta_j) ->
    (e^s v_:,j, theta_j e^-2s) and uniform rotations of pairs of latent columns.  Exact, like
    ``joint-nuts``; on Gadd et al.'s simulation, where Z's posterior is a ring about the origin that
    NUTS follows with hundreds of leapfrog steps per draw, it is the faster of the two (measured in
    ``docs/reproduction/gadd_gplvm.md``).

    Chains start as ``joint-nuts``'s: the type-II ML psi plus N(0, ``start_noise_sd``^2) noise (or
    ``init={"psi": ..., "Z": ...}``), Z_0 the ML fit's q(Z) mean at psi_0.  ``posterior["Z"]`` holds Z
    per kept draw.  Judge convergence on quantities the model's mirror symmetries leave unchanged
    (``gpbayes.gplvm.joint.label_invariant``): the rotation moves swap and mix the latent labels.

    Parameters
    ----------
    n_ess : int, default 1
        Elliptical slice updates of V per iteration.
    scale_sd : float, default 0.2
        Standard deviation of s in the scale moves.
    proposal_sd : float, default 0.1
        The psi proposal starts at proposal_sd^2 I (adapted in warm-up: Robbins-Monro scale towards
        ``target_accept``, the draws' covariance at 1/2 and 3/4 of it).
    target_accept : float, default 0.25
        Acceptance rate of the psi block the warm-up tunes towards.
    start_noise_sd : float, default 0.1
        Chains start at the type-II ML psi plus N(0, start_noise_sd^2) noise on the log scale.
    inverse_temperatures : tuple of float, default (1.0,)
        A replica-exchange ladder 1 = b_0 > b_1 > ... > 0 (``gpbayes.gplvm.joint.tempered_step``: one
        copy of the sampler per b_k on p(psi) N(V; 0, I) p(Y | Z, psi)^b_k, neighbours' states exchanged
        with the MH ratio of Geyer 1991): the b = 1 copy's draws are kept.  For posteriors with separated
        modes (Gadd et al.'s Case 2: latent GPs of different smoothness sigma); K temperatures cost K
        times an iteration.  The default, one temperature, is the plain chain.
    adapt_ladder : bool, default True
        With three or more temperatures, respace the interior ones during warm-up to equal swap
        rejection rates (Syed et al. 2022; ``gpbayes.gplvm.joint.respace_ladder``); the end points stay.
        Each chain's ladder after warm-up is ``sample_stats.attrs["inverse_temperatures"]`` (chain by
        chain).
    """

    n_ess: int = 1
    scale_sd: float = 0.2
    proposal_sd: float = 0.1
    target_accept: float = 0.25
    start_noise_sd: float = 0.1
    inverse_temperatures: tuple = (1.0,)
    adapt_ladder: bool = True

    aliases: ClassVar = {"joint-gibbs": {}}
    models: ClassVar = (GPLVMRegressor,)
    init_components: ClassVar = ("psi", "Z")
    stoppable: ClassVar = True
    independent_chains: ClassVar = True
    library: ClassVar = {f: _lazy("gplvm.joint", "gibbs_chain_spec") for f in ("n_ess", "scale_sd", "proposal_sd",
                                                                             "target_accept")}
    own_defaults: ClassVar = {"start_noise_sd": "API over-dispersion of starts, as pm-within-gibbs's",
                              "inverse_temperatures": "one temperature: the plain chain (tempering is opt-in)",
                              "adapt_ladder": "a given ladder is respaced in warm-up (Syed et al. 2022)"}

    def __post_init__(self):
        betas = self.inverse_temperatures
        if isinstance(betas, (str, bytes)) or not hasattr(betas, "__len__"):
            raise TypeError(f"inverse_temperatures must be a sequence of floats such as (1.0, 0.5, 0.25), got {betas!r}")
        try:
            b = tuple(float(x) for x in betas)
        except (TypeError, ValueError):
            raise TypeError(f"inverse_temperatures must be a sequence of floats, got {betas!r}") from None
        if not b or b[0] != 1.0 or any(y >= x for x, y in zip(b, b[1:])) or b[-1] <= 0.0:
            raise ValueError(f"inverse_temperatures must start at 1.0 and decrease strictly to a positive value, "
                             f"e.g. (1.0, 0.5, 0.25); got {betas!r}")
        object.__setattr__(self, "inverse_temperatures", b)
        if not isinstance(self.adapt_ladder, (bool, np.bool_)):
            raise TypeError(f"adapt_ladder must be True or False, got {self.adapt_ladder!r}")
        _int(self, "n_ess", 0)
        _float(self, "scale_sd", 0.0)
        _float(self, "proposal_sd", 0.0)
        _float(self, "target_accept", 0.0, 1.0)
        _float(self, "start_noise_sd", 0.0, open_low=False)

    def chain_specs(self, model, rngs, n_warmup):
        """Per chain, ``gplvm.joint.gibbs_chain_spec`` from (psi_0, Z_0) (the class docstring)."""
        from ..gplvm import joint

        specs = []
        options = {"n_warmup": n_warmup, "proposal_sd": self.proposal_sd, "n_ess": self.n_ess,
                   "scale_sd": self.scale_sd, "target_accept": self.target_accept}
        for c, r in enumerate(rngs):
            psi0, Z0 = _joint_start(self, model, r, c)
            if len(self.inverse_temperatures) == 1:
                specs.append(joint.gibbs_chain_spec(model.gplvm, model.prior, psi0, Z0, **options))
            else:
                specs.append(joint.tempered_chain_spec(model.gplvm, model.prior, psi0, Z0, self.inverse_temperatures,
                                                       adapt_ladder=bool(self.adapt_ladder), **options))
        return specs

    def to_groups(self, model, result, rngs, attrs):
        """``joint-nuts``'s groups; with a ladder, ``sample_stats["swap_accepted"]`` over
        ``(chain, draw, swap_pair)`` too (pair k exchanges temperatures k and k+1; NaN where not offered)."""
        groups = GPLVMJointNUTS.to_groups(self, model, result, rngs, attrs)
        if len(self.inverse_temperatures) > 1:
            groups["sample_stats"]["swap_accepted"] = (("chain", "draw", "swap_pair"),
                                                       np.stack([np.stack(c.extra["swap_accepted"]) for c in result]))
            # each chain's ladder after warm-up (the given one unless adapt_ladder), chain by chain
            groups["sample_stats"].attrs["inverse_temperatures"] = [
                float(b) for c in result for b in c.params.get("inverse_temperatures", self.inverse_temperatures)]
        return groups


def _joint_start(method, model, r, c) -> tuple[np.ndarray, np.ndarray]:
    """Chain c's (psi_0, Z_0): ``init``'s parts where given, else the ML psi plus noise drawn from r and
    the ML fit's q(Z) mean at psi_0."""
    from ..gplvm.vb import latent_posterior

    given = method._start(c)
    if given is not None:
        psi0 = np.asarray(given["psi"], dtype=np.float64).copy()
    else:
        psi0 = model.ml_fit.psi + method.start_noise_sd * r.standard_normal(len(model.param_names))
    if given is not None and given.get("Z") is not None:
        return psi0, np.asarray(given["Z"], dtype=np.float64)
    return psi0, latent_posterior(model.gplvm, psi0, model.ml_fit.params).mean
