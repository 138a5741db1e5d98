"""The convergence gate's thresholds, shared by the claims (``claims``) and their final states
(``final_states``) without either importing the other.

Every claim that rests on MCMC output is read only from chains whose rank-normalised split R-hat is at most
``MAX_RHAT`` and whose bulk ESS is at least ``MIN_ESS`` on every gated quantity (Vehtari et al. 2021's
recommendation for a reported posterior summary: R-hat < 1.01 for the final numbers, ESS > 100 per quantity;
our gate's 1.05 is the looser of their two thresholds, for a decision, not a final summary).
"""

from __future__ import annotations

__all__ = ["MAX_RHAT", "MIN_ESS"]

#: the convergence gate of every claim that rests on MCMC output
MAX_RHAT, MIN_ESS = 1.05, 100.0
