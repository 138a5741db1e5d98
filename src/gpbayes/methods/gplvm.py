"""The method of the supervised GPLVM (Gadd et al.): block-wise adaptive pseudo-marginal
MH-within-Gibbs on psi with the latent Z kept per draw.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np

from ..mcmc import runner
from ..models import GPLVMRegressor
from .base import _LATENT_DIMS, Method, _choice, _float, _int, posterior_groups

__all__ = ['GPLVMPseudoMarginal']


@dataclasses.dataclass(frozen=True)
class GPLVMPseudoMarginal(Method):
    """Gadd et al. Algs. 2-3: block-wise adaptive pseudo-marginal MH on psi (eq. 6 estimate with
    ``n_imp`` = Q draws of q(Z), q(Z) re-optimised per proposal by at most ``vb_max_iter`` L-BFGS
    iterations from the current q, or from the type-II ML fit's q with ``vb_start="ml"``), adaptation
    from iteration ``adapt_start`` (None: ``n_warmup``),
    block proposals starting at ``initial_proposal_sd``^2 I, then an elliptical slice update of Z;
    chains start at the type-II ML psi plus N(0, ``start_noise_sd``^2) noise (or at the psi given to
    ``gb.sample(..., init=...)``).

    Parameters
    ----------
    n_imp : int, default 20
        Q, the draws of q(Z) per estimate of p(Y | X, theta) (eq. 6).
    adapt_start : int or None, default None
        The iteration from which the block proposals adapt; None: ``n_warmup``.
    vb_max_iter : int, default 50
        L-BFGS iterations that re-optimise q(Z) per proposal (from the current q).
    initial_proposal_sd : float, default 0.1
        Block proposals start at initial_proposal_sd^2 I.
    start_noise_sd : float, default 0.1
        Chains start at the type-II ML psi plus N(0, start_noise_sd^2) noise.
    vb_start : {"current", "ml"}, default "current"
        Where each re-optimisation of q(Z) (Alg. 1, at every proposal) starts: ``"current"`` the
        chain's current q (warm start: fewer iterations to converge; q then depends on the path);
        ``"ml"`` the type-II ML fit's q (``GPLVMRegressor.ml_fit``), so that q is a function of the
        proposed psi alone and the chain is exact whatever ``vb_max_iter`` (Sec. 6.1 re-optimises q
        "after each full conditional sample"; the reproduction's setting).
    """

    n_imp: int = 20
    adapt_start: int | None = None
    vb_max_iter: int = 50
    initial_proposal_sd: float = 0.1
    start_noise_sd: float = 0.1
    vb_start: str = "current"

    aliases: ClassVar = {"pm-within-gibbs": {}}
    models: ClassVar = (GPLVMRegressor,)
    init_components: ClassVar = ("psi",)
    stoppable: ClassVar = True
    independent_chains: ClassVar = True
    own_defaults: ClassVar = {
        "n_imp": "Q = 20 (gplvm.PMGibbsConfig's default is 10; gplvm/ is owned elsewhere, not changed here)",
        "adapt_start": "None: adapt after the warm-up (PMGibbsConfig's fixed default 200 ignores n_warmup)",
        "vb_max_iter": "the API bounds each q(Z) re-optimisation; optimise_variational has its own default",
        "initial_proposal_sd": "API start of the block proposals", "start_noise_sd": "API over-dispersion of starts",
        "vb_start": "the API warm-starts q(Z) from the chain's current q (PMGibbsConfig's warm_start=False with no "
                    "reference_params starts from PCA)"}

    def __post_init__(self):
        _int(self, "n_imp", 1)
        _int(self, "adapt_start", 0, optional=True)
        _int(self, "vb_max_iter", 0)
        _float(self, "initial_proposal_sd", 0.0)
        _float(self, "start_noise_sd", 0.0, open_low=False)
        _choice(self, "vb_start", ("current", "ml"))

    def chain_specs(self, model, rngs, n_warmup):
        """Per chain, ``gplvm.pseudo_marginal.run_chain``'s configuration of the runner from the module's
        public ``within_gibbs_init``/``within_gibbs_step`` (one Alg. 3 step per iteration, from the
        previous Z, as the paper): the same draws in the same order, and the latent Z kept per draw."""
        from ..gplvm import pseudo_marginal as gpm

        sd = self.initial_proposal_sd
        adapt_start = n_warmup if self.adapt_start is None else self.adapt_start
        from_ml = self.vb_start == "ml"
        config = gpm.PMGibbsConfig(blocks=model.blocks(), n_imp=self.n_imp, adapt_start=adapt_start,
                                   warm_start=not from_ml, vb_options={"max_iter": self.vb_max_iter},
                                   reference_params=model.ml_fit.params if from_ml else None)

        def kernel(r, st):
            return gpm.within_gibbs_step(r, st, model.gplvm, model.prior, config, n_latent_steps=1,
                                         latent_start="continue")

        specs = []
        for c, r in enumerate(rngs):
            given = self._start(c)
            psi0 = (given["psi"].copy() if given is not None
                    else model.ml_fit.psi + self.start_noise_sd * r.standard_normal(len(model.param_names)))
            covs = [sd**2 * np.eye(b.size) for b in config.blocks]
            start = (lambda r=r, psi0=psi0, covs=covs: gpm.within_gibbs_init(
                r, model.gplvm, model.prior, psi0, config, proposal_covs=covs, n_latent_steps=1))
            specs.append(runner.ChainSpec(start, kernel, n_warmup, record=lambda st, info: {"Z": st.latent.Z}))
        return specs

    def to_groups(self, model, result, rngs, attrs):
        """The hyperparameter groups of :func:`posterior_groups` plus the latent ``Z`` per draw in
        ``posterior`` over ``(chain, draw, obs, latent)``."""
        groups = posterior_groups(model, result, attrs)
        groups["posterior"]["Z"] = (("chain", "draw", *_LATENT_DIMS["Z"]), np.stack([c.extra["Z"] for c in result]))
        return groups
