"""Methods of the sparse variational GP (``SparseGP``, ``SparseGPClassifier``; Hensman et al. 2015):
joint HMC on (v, psi) of the sparse variational target and their Gibbs baseline.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from ..models import SparseGP
from .base import Method, _bool, _choice, _float, _int, _lazy

__all__ = ['JointHMC', 'SparseGibbs']


class _Sparse(Method, register=False):
    """A sampler of the sparse target: chain c starts at (v_0, psi_0) with v_0 ~ q(v) of the model's
    Gaussian (SVGP) fit and psi_0 the fit's psi (``sparse.target.initial_position``; the poster's
    "initialize the sampler with a draw from a Gaussian approximation"), drawn from the chain's
    generator, or at the psi (and v) given to ``gb.sample(..., init=...)``."""

    models: ClassVar = (SparseGP,)
    stoppable: ClassVar = True
    independent_chains: ClassVar = True
    init_components: ClassVar = ("psi", "v")

    def chain_specs(self, model, rngs, n_warmup):
        """Per chain, the sampler's specification from :meth:`_position0`."""
        return [self._spec(model.target, self._position0(model, r, c), n_warmup) for c, r in enumerate(rngs)]

    def _position0(self, model, rng, c: int):
        """Chain c's first (v, psi), joined (``SparseTarget.join``): v given or drawn from q(v), psi given
        or the fit's."""
        from ..sparse.target import initial_position

        params = model.svgp_fit.params
        given = self._start(c)
        if given is None:
            return initial_position(rng, model.target, params)
        if "v" in given:
            return model.target.join(given["v"], given["psi"])
        return initial_position(rng, model.target, params._replace(psi=given["psi"]))


@dataclasses.dataclass(frozen=True)
class JointHMC(_Sparse):
    """Hensman et al. 2015: HMC jointly on (v, psi) of the sparse variational target log q*(v, theta)
    with Stan's warm-up (H&G 2014 Sec. 3.2): dual averaging towards ``target_accept``, mass matrix
    from two windows (``metric`` ``"auto"``/``"diag"``/``"dense"``, when ``adapt_mass``; start
    ``mass``, None: identity), a fixed trajectory length ``trajectory_length`` (L = min(ceil(lambda /
    eps), ``max_steps``)), step size jittered by +-``step_size_jitter``, first eps
    ``initial_step_size`` (None: H&G Alg. 4).

    Parameters
    ----------
    target_accept : float, default 0.8
        The mean acceptance statistic dual averaging aims at (Stan's default).
    trajectory_length : float, default 1.5
        lambda: L = min(ceil(lambda / eps), max_steps) leapfrog steps, lambda in units of the
        adapted metric.
    max_steps : int, default 64
        The cap on L.
    mass : array or None, default None
        The metric to start warm-up from; None: identity.
    adapt_mass : bool, default True
        Adapt the metric in Stan's windows during warm-up.
    metric : {"auto", "diag", "dense"}, default "auto"
        The adapted metric's form ("auto": dense when the window has enough draws, else diagonal).
    initial_step_size : float or None, default None
        The first eps; None: H&G Alg. 4's heuristic.
    step_size_jitter : float, default 0.2
        Each transition's eps is multiplied by U(1 - j, 1 + j).
    """

    target_accept: float = 0.8
    trajectory_length: float = 1.5
    max_steps: int = 64
    mass: Any = None
    adapt_mass: bool = True
    metric: str = "auto"
    initial_step_size: float | None = None
    step_size_jitter: float = 0.2

    aliases: ClassVar = {"joint-hmc": {}}
    library: ClassVar = {f: _lazy("sparse.mcmc", "hmc_adaptation")
                         for f in ("target_accept", "trajectory_length", "max_steps", "mass", "adapt_mass", "metric",
                                   "initial_step_size", "step_size_jitter")}

    def __post_init__(self):
        _float(self, "target_accept", 0.0, 1.0)
        _float(self, "trajectory_length", 0.0)
        _int(self, "max_steps", 1)
        _bool(self, "adapt_mass")
        _choice(self, "metric", ("auto", "diag", "dense"))
        _float(self, "initial_step_size", 0.0, optional=True)
        _float(self, "step_size_jitter", 0.0, 1.0, open_low=False)

    def _spec(self, target, position0, n_warmup):
        from ..sparse import mcmc as sparse_mcmc

        return sparse_mcmc.joint_chain_spec(target, position0, n_warmup=n_warmup, **self.fields())


@dataclasses.dataclass(frozen=True)
class SparseGibbs(_Sparse):
    """Hensman et al.'s baseline: HMC on v | theta (dual averaging towards ``target_accept``, fixed
    trajectory length, at most ``max_steps``) alternating with random-walk MH on psi | v (scale from
    ``psi_scale`` tuned towards ``psi_target_accept``).

    Parameters
    ----------
    target_accept : float, default 0.8
        The acceptance statistic the v-step's dual averaging aims at.
    psi_target_accept : float, default 0.3
        Acceptance rate the psi | v random-walk scale is tuned towards.
    trajectory_length, max_steps : float, int, default 1.5, 64
        The v-step's L = min(ceil(trajectory_length / eps), max_steps).
    psi_scale : float, default 0.1
        The psi proposal's starting scale (psi_scale I).
    step_size_jitter : float, default 0.2
        The v-step's eps is multiplied by U(1 - j, 1 + j).
    """

    target_accept: float = 0.8
    psi_target_accept: float = 0.3
    trajectory_length: float = 1.5
    max_steps: int = 64
    psi_scale: float = 0.1
    step_size_jitter: float = 0.2

    aliases: ClassVar = {"gibbs": {}}
    library: ClassVar = {f: _lazy("sparse.mcmc", "gibbs_adaptation")
                         for f in ("target_accept", "psi_target_accept", "trajectory_length", "max_steps",
                                   "psi_scale", "step_size_jitter")}

    def __post_init__(self):
        _float(self, "target_accept", 0.0, 1.0)
        _float(self, "psi_target_accept", 0.0, 1.0)
        _float(self, "trajectory_length", 0.0)
        _int(self, "max_steps", 1)
        _float(self, "psi_scale", 0.0)
        _float(self, "step_size_jitter", 0.0, 1.0, open_low=False)

    def _spec(self, target, position0, n_warmup):
        from ..sparse import mcmc as sparse_mcmc

        return sparse_mcmc.gibbs_chain_spec(target, position0, n_warmup=n_warmup, **self.fields())
