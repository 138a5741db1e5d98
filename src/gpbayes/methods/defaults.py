"""The method ``gb.sample(model)`` runs when no ``method`` is given: per model and number of
hyperparameters, the one the committed benchmarks show fastest to converge (``benchmarks/results/``),
and the reason, with the measurements, shown to the user.
"""

from __future__ import annotations

from .base import Method
from .exact import NUTS, RandomWalkMH
from .gplvm import GPLVMPseudoMarginal
from .latent import ISCorrectedNUTS, PseudoMarginal, SliceSampler, WhitenedNUTS
from .sparse import JointHMC
from ..models import GPLVMRegressor, GPRegressor, LatentGP, SparseGP

__all__ = ["default_method", "DefaultMethodWarning", "MAX_RANDOM_WALK_HYPERPARAMETERS",
           "MAX_PSEUDO_MARGINAL_HYPERPARAMETERS"]


#: The most hyperparameters for which ``gb.sample(model)`` picks random-walk MH for a GPRegressor (NUTS
#: above).  Measured (benchmarks/results/bench_default_method.txt, synthetic, 4 chains run until split
#: R-hat < 1.01 and bulk ESS > 400): CPU seconds to converge, RWMH vs NUTS, 1.2 vs 10.6 (n = 100, 3
#: hyperparameters), 0.9 vs 3.4 (n = 30, 3), 3.1 vs 9.2 (n = 100, ARD, 6); NUTS's cost there is
#: mostly its warm-up.  Not measured between 7 and 14; at 15 (Boston Housing ARD) NUTS is measured
#: (3.13x NumPyro's NUTS), random-walk MH is not.
MAX_RANDOM_WALK_HYPERPARAMETERS = 6

#: The most hyperparameters for which ``gb.sample(model)`` picks pseudo-marginal MH for a latent-Gaussian
#: model (GPClassifier, PoissonGP); above it, the IS-corrected NUTS (``ISCorrectedNUTS``).  Where the
#: importance estimator does not apply (per-bin exposure): slice sampling in the surrogate-data
#: representation up to it, the whitened joint NUTS (``WhitenedNUTS``) above (PoissonGP: 11.6 vs 3.6
#: ESS/CPU-s with 2, 6.8 vs 13.1 with 5).
#: Measured (benchmarks/results/bench_default_method.txt, n = 100, 4 chains x (500 + 1000), min bulk
#: ESS per CPU-s; the weighted estimator's ESS for nuts-is): 2 hyperparameters, probit: PM-MH 46.6,
#: nuts-is 33.7, slice surr-site 4.6; Poisson: PM-MH 70.1, nuts-is 32.5, slice 10.2; Pima isotropic
#: (300 rows): PM-MH 13.2, nuts-is 4.1.  5 (probit ARD): nuts-is 38.4, PM-MH 6.3 (4 x 5000).  9 (probit
#: ARD): nuts-is 29.5, slice 0.89, PM-MH 0.80; Pima ARD: nuts-is 11.8, PM-MH 0.51, slice 0.25.  15
#: (a 13-feature ARD probit classifier, benchmarks/bench_sticking.py): PM-MH R-hat 1.56 after 4 x 1,500
#: and stuck chains at 4 x 10,000.  Not measured: 3-4.
MAX_PSEUDO_MARGINAL_HYPERPARAMETERS = 2


def _random_walk_unmeasured(kernel) -> str:
    """Why random-walk MH is not the default for this kernel, or "" where it may be: it is measured on
    one stationary kernel (the SE, bench_default_method.txt); a sum, a product or a periodic kernel
    -- whose period's posterior is far narrower than the other parameters' -- is left to NUTS (the
    co2-seasonal peer problem, SE + periodic: random-walk MH R-hat 1.23 after 4 x 10,000 draws)."""
    from ..kernels import Periodic, Product, Sum
    from ..means import MeanKernel

    kernel = kernel.kernel if isinstance(kernel, MeanKernel) else kernel  # a mean's kernel wraps the user's
    if isinstance(kernel, (Sum, Product)):
        return f"a {type(kernel).__name__.lower()} of kernels"
    if isinstance(kernel, Periodic):
        return "a periodic kernel"
    return ""


class DefaultMethodWarning(UserWarning):
    """Which method ``gb.sample(model)`` chose with no ``method`` given, and why (shown once per
    distinct choice by Python's default warning filter; filter this category to silence it)."""


_EVIDENCE = "benchmarks/results/bench_default_method.txt"


def default_method(model, keep_latent: bool = False) -> tuple[Method, str]:
    """The method ``gb.sample(model)`` runs when no ``method`` is given, and the reason (the evidence).

    ``keep_latent`` (``gb.sample(model, log_likelihood=True)`` or ``posterior_predictive=True`` with no
    method): for a latent-Gaussian model, a method that keeps f per draw, which those groups and
    ``az.loo`` need -- the choice made where the importance estimator does not apply (below).  A
    :class:`~gpbayes.models.LatentGP` always gets one.

    Per model and number of hyperparameters p, the method the committed benchmarks show fastest to
    converge (CPU time to split R-hat < 1.01 and bulk ESS > 400, or min bulk ESS per CPU-second;
    ``benchmarks/results/``):

    * GPRegressor: :class:`RandomWalkMH` for p <= :data:`MAX_RANDOM_WALK_HYPERPARAMETERS` (3-9x
      faster to converge than NUTS at p = 3 and 6, bench_default_method.txt), :class:`NUTS` above
      (Boston Housing ARD, p = 15: 3.13x NumPyro's NUTS, bench_peers_housing_4x500.txt) and for a
      sum, a product or a periodic kernel whatever p (SE + periodic on the CO2 series, p = 6:
      random-walk MH R-hat 1.23 after 4 x 10,000 draws; bench_peers_co2-seasonal_4x800.txt).
    * GPClassifier, PoissonGP: :class:`PseudoMarginal` (Laplace, N_imp 64) for p <=
      :data:`MAX_PSEUDO_MARGINAL_HYPERPARAMETERS` (Pima, 300 rows, isotropic, p = 2: 10-13x NumPyro's
      joint NUTS in min bulk ESS per CPU-second in earlier runs of benchmarks/bench_peers.py, 23.2x in
      bench_peers_pima-iso_4x800.txt; ahead of nuts-is and the slice samplers at p = 2); above,
      :class:`ISCorrectedNUTS` (NUTS on the EP or Laplace marginal, importance-corrected: 6x PM-MH at
      p = 5, over 20x PM-MH and slice at p = 9); for a PoissonGP with per-bin exposure (where the
      importance estimator does not apply) :class:`SliceSampler` ``"surr-site"`` up to
      :data:`MAX_PSEUDO_MARGINAL_HYPERPARAMETERS`, :class:`WhitenedNUTS` above (PoissonGP, p = 2:
      slice 11.6 vs 3.6 ESS/CPU-s; p = 5: 6.8 vs 13.1).
    * SparseGP, SparseGPClassifier: :class:`JointHMC` -- Hensman et al.'s claim, reproduced
      (default_scale/sparse_mcmc.json: PSRF < 1.1 in 93 vs 922 iterations with the RBF kernel;
      Gibbs did not reach it with ARD).
    * GPLVMRegressor: :class:`GPLVMPseudoMarginal`, its only sampler.
    * LatentGP, and a GPClassifier / PoissonGP with ``keep_latent``: the exact samplers that keep f,
      as for the per-bin-exposure PoissonGP above: :class:`SliceSampler` ``"surr-site"`` up to
      :data:`MAX_PSEUDO_MARGINAL_HYPERPARAMETERS` hyperparameters, :class:`WhitenedNUTS` above.
      Measured once on the gallery's Student-t LatentGP (n = 40, 2 hyperparameters, 2 chains x (200 +
      300)): slice surr-site 8.2, nuts-whitened 3.0 min bulk ESS per CPU-second (AMD EPYC, shared).
      A LatentGP with ``sample_offset=True``: :class:`SliceSampler` ``"surr-site"`` whatever p (M&A
      Sec. 5 slice-samples m with psi; :class:`WhitenedNUTS` does not take m).
    """
    p = len(model.hyperparameter_labels)  # the number of coordinates of psi
    if isinstance(model, GPRegressor):
        unmeasured = _random_walk_unmeasured(model.kernel)
        if unmeasured:
            return NUTS(), (f"GPRegressor with {p} hyperparameters and {unmeasured}: NUTS -- random-walk MH, the "
                            "choice for one stationary kernel with few hyperparameters, had not converged after "
                            "4 x 10,000 draws on an SE + periodic seasonal series with 6 (co2-seasonal: R-hat 1.23, "
                            "bulk ESS 13), where NUTS converged (benchmarks/results/bench_peers_co2-seasonal_4x800.txt)")
        if p <= MAX_RANDOM_WALK_HYPERPARAMETERS:
            return RandomWalkMH(), (
                f"GPRegressor with {p} hyperparameters (<= {MAX_RANDOM_WALK_HYPERPARAMETERS}): random-walk MH on "
                "the exact marginal, the fastest to converge measured with few hyperparameters (CPU seconds to "
                "R-hat < 1.01 and bulk ESS > 400, RWMH vs NUTS: 1.2 vs 10.6 with 3, 3.1 vs 9.2 with 6; "
                f"{_EVIDENCE})")
        return NUTS(), (f"GPRegressor with {p} hyperparameters (> {MAX_RANDOM_WALK_HYPERPARAMETERS}): NUTS, the "
                        "fastest measured with many hyperparameters (Boston Housing ARD, 15: 3.13x NumPyro's NUTS in "
                        "min bulk ESS per CPU-second, benchmarks/results/bench_peers_housing_4x500.txt; random-walk "
                        "MH is not measured there)")
    if isinstance(model, SparseGP):
        return JointHMC(), (f"{type(model).__name__}: joint HMC on (v, psi), Hensman et al.'s method, which reached "
                            "PSRF < 1.1 in fewer iterations than Gibbs (benchmarks/results/default_scale/"
                            "sparse_mcmc.json: 93 vs 922 with the RBF kernel; Gibbs not at all with ARD)")
    if isinstance(model, GPLVMRegressor):
        return GPLVMPseudoMarginal(), "GPLVMRegressor: Gadd et al.'s pseudo-marginal MH-within-Gibbs, its only sampler"
    name = type(model).__name__
    if keep_latent or isinstance(model, LatentGP):
        why = "its results keep f" if isinstance(model, LatentGP) else "f is to be kept (log_likelihood/posterior_predictive)"
        if getattr(model, "sample_offset", False):
            return SliceSampler(representation="surr-site", keep_latent=True), (
                f"{name} with sample_offset=True ({p} hyperparameters, m among them): slice sampling in the "
                "surrogate-data representation (M&A Alg. 4, surr-site), M&A Sec. 5's sampler of the mean "
                "offset; nuts-whitened cannot sample m")
        if p > MAX_PSEUDO_MARGINAL_HYPERPARAMETERS:
            return WhitenedNUTS(), (
                f"{name} with {p} hyperparameters (> {MAX_PSEUDO_MARGINAL_HYPERPARAMETERS}), {why}: NUTS on the "
                "whitened joint posterior of (psi, f) (exact, unweighted), the faster of the samplers that keep f "
                f"with more hyperparameters (min bulk ESS per CPU-second, PoissonGP with 5: 13.1 vs slice "
                f"surr-site's 6.8; {_EVIDENCE})")
        return SliceSampler(representation="surr-site", keep_latent=True), (
            f"{name} with {p} hyperparameters (<= {MAX_PSEUDO_MARGINAL_HYPERPARAMETERS}), {why}: slice sampling in "
            "the surrogate-data representation (M&A Alg. 4, surr-site), the faster of the samplers that keep f with "
            f"few hyperparameters (min bulk ESS per CPU-second, PoissonGP with 2: 11.6 vs nuts-whitened's 3.6; "
            f"{_EVIDENCE})")
    pm = PseudoMarginal()
    if p <= MAX_PSEUDO_MARGINAL_HYPERPARAMETERS and pm.why_not(model) is None:
        return pm, (f"{name} with {p} hyperparameters (<= {MAX_PSEUDO_MARGINAL_HYPERPARAMETERS}): pseudo-marginal "
                    "MH (Laplace, N_imp 64), the fastest measured with few hyperparameters (min bulk ESS per "
                    "CPU-second with 2: probit 46.6 vs nuts-is 33.7, Poisson 70.1 vs 32.5, Pima isotropic 13.2 vs "
                    f"4.1, and 13-23x NumPyro's joint NUTS on the 300-row Pima data set, "
                    f"benchmarks/results/bench_peers_pima-iso_4x800.txt; {_EVIDENCE})")
    isnuts = ISCorrectedNUTS()
    if isnuts.why_not(model) is None:
        marginal = "EP" if isnuts.importance_density(model) == "ep" else "Laplace"
        return isnuts, (f"{name} with {p} hyperparameters (> {MAX_PSEUDO_MARGINAL_HYPERPARAMETERS}): NUTS on the "
                        f"{marginal} marginal with an importance-sampling correction (exact; Vihola et al. 2020), the fastest "
                        "measured with more hyperparameters (min bulk ESS per CPU-second with 5: 38.4 vs "
                        "pseudo-marginal MH's 6.3; with 9: 29.5 vs 0.80 and slice surr-site's 0.89; "
                        f"{_EVIDENCE})")
    if p > MAX_PSEUDO_MARGINAL_HYPERPARAMETERS:
        return WhitenedNUTS(), (
            f"{name} with {p} hyperparameters (> {MAX_PSEUDO_MARGINAL_HYPERPARAMETERS}): {pm.why_not(model)}; NUTS "
            "on the whitened joint posterior (exact, unweighted) applies, and was the faster of the methods that "
            "do (min bulk ESS per CPU-second, PoissonGP with 5: 13.1 vs slice surr-site's 6.8; "
            f"{_EVIDENCE})")
    return SliceSampler(representation="surr-site"), (
        f"{name} with {p} hyperparameters: {pm.why_not(model)}; slice sampling in the surrogate-data "
        "representation (M&A Alg. 4, surr-site) applies, and was the faster of the methods that do (min bulk ESS "
        f"per CPU-second, PoissonGP with 2: 11.6 vs nuts-whitened's 3.6; {_EVIDENCE})")
