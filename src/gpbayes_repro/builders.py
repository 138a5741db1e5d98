"""Kernels and priors from config blocks: the one place the workflow builds them.

Every experiment states its kernel and priors in ``config/config.yaml`` in one
of two spellings, and this module is the only code that reads them:

* the family form ``{gamma: {shape: 1.2, rate: 0.2}}`` (also ``lognormal``,
  ``uniform``, ``loguniform``; ``gpbayes.priors.make_prior``), and
* Filippone & Girolami's dimension-scaled Gamma on the lengthscales,
  ``{shape: a, rate_times_sqrt_d: b}`` meaning tau ~ G(a, b / sqrt(d))
  (F&G 2014 Sec. 4.2: "shape a_tau = 1 and rate b_tau = 1/sqrt(d)"), or the
  same scaling written out at one dimension, ``{shape: a, rate: b, rate_for_d: d0}``
  meaning G(a, b) at d = d0 and G(a, b sqrt(d0 / d)) at any other d (the
  foundation slice states 1/sqrt(13) for Housing as 0.2773501; a user's
  regression set of another d gets the rate scaled to its own d), or a plain
  ``{shape: a, rate: b}`` Gamma (shape/rate).

Priors are on the natural-scale parameter; ``gpbayes.priors`` adds the Jacobian
of psi = log(parameter).  Parameter order follows the kernel: the scale
parameters (one, or one per input with ARD), the amplitude (absent with a
fixed amplitude), then any extra parameters (noise variance, a mean offset).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from gpbayes import priors
from gpbayes.kernels import SquaredExponential

__all__ = ["prior", "kernel_prior", "se_kernel", "kernel_from_spec"]

_KINDS = {"isotropic": False, "rbf": False, "ard": True}


def prior(spec: Mapping, d: int | None = None):
    """One prior from a config mapping (see the module docstring for the spellings).

    ``d`` is the input dimension, needed only by ``rate_times_sqrt_d`` and ``rate_for_d``.
    """
    if not isinstance(spec, Mapping):
        raise ValueError(f"a prior is a mapping, got {spec!r}")
    if "rate_times_sqrt_d" in spec or "rate_for_d" in spec:
        if d is None:
            raise ValueError(f"prior {dict(spec)!r} scales its rate with sqrt(d) but no input dimension was given")
        if "rate_times_sqrt_d" in spec:
            return priors.Gamma(spec["shape"], spec["rate_times_sqrt_d"] / np.sqrt(d))
        d0 = int(spec["rate_for_d"])
        # at the stated dimension the stated rate itself, so its numbers are exactly as written
        rate = spec["rate"] if int(d) == d0 else float(spec["rate"] * np.sqrt(d0 / int(d)))
        return priors.Gamma(spec["shape"], rate)
    if set(spec) == {"shape", "rate"}:
        return priors.Gamma(spec["shape"], spec["rate"])
    return priors.make_prior(dict(spec))


def kernel_prior(kernel: SquaredExponential, scale: Mapping, amplitude: Mapping | None = None,
                 extra: Sequence = ()) -> priors.IndependentPrior:
    """Independent prior over the kernel's psi (scales, amplitude) followed by ``extra``.

    ``scale`` is used for every scale parameter (``kernel.n_scale`` of them);
    ``amplitude`` is required unless the kernel's amplitude is fixed; ``extra``
    holds further config mappings or ready prior objects, appended in order.
    """
    d = kernel.input_dim
    comps = [prior(scale, d)] * kernel.n_scale
    if not kernel.fixed_amplitude:
        if amplitude is None:
            raise ValueError("the kernel has an amplitude parameter but no amplitude prior was configured")
        comps.append(prior(amplitude, d))
    comps.extend(e if hasattr(e, "log_density") else prior(e, d) for e in extra)
    return priors.IndependentPrior(tuple(comps))


def se_kernel(d: int, kind: str, parameterisation: str, nugget: float = 0.0) -> SquaredExponential:
    """Squared-exponential kernel: ``kind`` is ``isotropic``/``rbf`` (one scale) or ``ard``."""
    if kind not in _KINDS:
        raise ValueError(f"kernel must be one of {sorted(_KINDS)}, got {kind!r}")
    return SquaredExponential(int(d), ard=_KINDS[kind], parameterisation=parameterisation, nugget=nugget)


def kernel_from_spec(spec: Mapping, input_dim: int) -> SquaredExponential:
    """Kernel from a config mapping ``{ard, parameterisation, fixed_amplitude, nugget}`` (all optional)."""
    return SquaredExponential(
        input_dim=input_dim,
        ard=bool(spec.get("ard", False)),
        parameterisation=str(spec.get("parameterisation", "fg")),
        fixed_amplitude=bool(spec.get("fixed_amplitude", False)),
        nugget=float(spec.get("nugget", 0.0)),
    )
