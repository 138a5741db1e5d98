"""The final state of a claim: what a reader can act on, not only PASS / FAIL / INCONCLUSIVE (issue 32).

A claim's verdict (:mod:`gpbayes_repro.claims`) is decided on an interval.  An
INCONCLUSIVE verdict says only that the interval did not decide; a reader of the
paper asks *why not, and what would it take*.  :func:`final_state` answers with one
of :data:`STATES`:

``PASS`` / ``FAIL``
    the interval decided the claim.
``EQUIVALENT``
    the interval lies inside an equivalence margin that the paper's own words fix
    (the registry's ``equivalence``).  For a claim of a *difference* ("much faster")
    this means the difference did not reproduce as stated, and the detail says so.
``UNDECIDABLE_ON_DATA``
    even at the largest count the paper's data allow (the registry's ``data_limit``:
    the paper's own number of replicates, test points or data draws) the interval
    could not exclude the threshold at 80 % power; the detail gives the minimum
    detectable effect at that count.
``NOT_ASSESSABLE``
    the chains the verdict rests on do not mix (split R-hat / bulk ESS gate);
    the detail gives the diagnostics.
``NEEDS_COMPUTE``
    the claim is decidable with more replicates: the detail gives the 80 %-power
    count from :func:`project`, the measured CPU per replicate and the projected
    total, and the tier that would run it.

One projection, :func:`project`, computes every count: the sequential designs'
futility checks use it at 50 % power (the count at which the interval would just
exclude the threshold if the estimate stayed where it is: the optimistic end), the
final state at 80 % power, Hensman claim 2's test points that would decide it
(``what_would_decide``) at 50 %.  One check is not a count and stays where it is: the AMIS
designs' futility (``experiments.amis.analysis._futile`` / ``_pooled_futile``) asks whether the
interval *at the cap* around the current estimate would decide, with the IQR-ratio pivot's own
quantiles at the cap's replicate count, which are not normal at 12-48 replicates (a t(3)
reference); a normal-theory count in their place would change which replicate blocks the
committed runs drew.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from scipy import stats

__all__ = ["STATES", "POWER", "project", "se_from_interval", "minimum_detectable_effect", "final_state",
           "cpu_per_unit", "REASON_CODES"]

#: every final state a claim record can carry, in the order the claims page lists them
STATES = ("PASS", "FAIL", "EQUIVALENT", "UNDECIDABLE_ON_DATA", "NOT_ASSESSABLE", "NEEDS_COMPUTE")
#: the power at which a claim's count to decide is projected (the conventional 80 %)
POWER = 0.8
#: reason codes of the per-paper summary (AEA data editor style): one per state that is not PASS / FAIL
REASON_CODES = {
    "EQUIVALENT": "within the margin the paper's words fix: the stated difference did not reproduce",
    "UNDECIDABLE_ON_DATA": "the paper's own data cannot decide it at any compute",
    "NOT_ASSESSABLE": "the sampler does not mix: the claim cannot be read from these chains",
    "NEEDS_COMPUTE": "decidable with more replicates: the count and its CPU are stated",
}


def project(estimate: float, se: float, threshold: float, n_now: float, *, level: float = 0.95,
            power: float = POWER) -> float:
    """Replicates at which a level-``level`` interval excludes ``threshold`` with probability ``power``.

    The standard normal-theory sample-size formula: if the true effect is the current
    ``estimate`` and the standard error falls as 1/sqrt(count) from ``se`` at ``n_now``
    replicates, the interval excludes the threshold with probability ``power`` once

        n = n_now ((z_{(1+level)/2} + z_power) se / |estimate - threshold|)^2.

    At ``power=0.5`` (z = 0) this is the count at which the interval would *just*
    exclude the threshold were the estimate to stay put: the optimistic end used by the
    sequential designs' futility stops.  Infinite for an estimate on the threshold;
    NaN without a finite, non-negative s.e.
    """
    if not 0.0 < level < 1.0 or not 0.0 < power < 1.0:
        raise ValueError(f"level and power must lie in (0, 1), got level={level}, power={power}")
    gap = abs(float(estimate) - float(threshold))
    se = float(se)
    if not (math.isfinite(se) and math.isfinite(gap)) or se < 0:
        return math.nan
    if gap == 0.0:
        return math.inf
    z = float(stats.norm.ppf((1.0 + level) / 2.0)) + float(stats.norm.ppf(power))
    return float(n_now) * (z * se / gap) ** 2


def se_from_interval(lo: float, hi: float, level: float = 0.95) -> float:
    """The standard error a symmetric normal interval [lo, hi] at ``level`` implies: (hi - lo) / (2 z).

    For intervals built on a log scale pass the logs.  NaN for an unbounded or empty interval.
    """
    lo, hi = float(lo), float(hi)
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi < lo:
        return math.nan
    return (hi - lo) / (2.0 * float(stats.norm.ppf((1.0 + level) / 2.0)))


def minimum_detectable_effect(se: float, n_now: float, n_max: float, *, level: float = 0.95,
                              power: float = POWER) -> float:
    """The smallest |effect - threshold| an interval at ``n_max`` replicates detects with ``power``.

    (z_{(1+level)/2} + z_power) se sqrt(n_now / n_max): the inverse of :func:`project`.
    """
    z = float(stats.norm.ppf((1.0 + level) / 2.0)) + float(stats.norm.ppf(power))
    return z * float(se) * math.sqrt(float(n_now) / float(n_max))


def cpu_per_unit(benchmarks, rules, units: float) -> float | None:
    """CPU seconds per replicate: the summed ``cpu_time`` of the rules' Snakemake benchmark files / ``units``.

    ``benchmarks``: a run's ``benchmarks/`` directory (one ``<rule>/<wildcards>.tsv`` per job);
    ``rules``: the rules whose jobs produced the replicates.  None where no record is found.
    """
    root = Path(benchmarks)
    total, found = 0.0, False
    for rule in rules:
        for path in sorted((root / rule).rglob("*.tsv")) if (root / rule).is_dir() else []:
            with open(path, newline="") as fh:
                for row in csv.DictReader(fh, delimiter="\t"):
                    try:
                        total += float(row["cpu_time"])
                        found = True
                    except (KeyError, TypeError, ValueError):
                        continue
    if not found or not units:
        return None
    return total / float(units)


def _num(x):
    try:
        x = float(x)
    except (TypeError, ValueError):
        return math.nan
    return x


def _dig(record: dict, path):
    """A value inside the record by a dotted path (``measured.chains_per_pm_scheme``, ``interval.n_pairs``).

    ``path`` may be a list of paths: the first that resolves.  A list value (counts per planned look) gives its
    last element (the cap's count: exact for a design that reached its cap, an upper bound otherwise).
    """
    if not path:
        return None
    if isinstance(path, (list, tuple)):
        for p in path:
            v = _dig(record, p)
            if v is not None:
                return v
        return None
    cur = _walk(record, path)
    if isinstance(cur, (list, tuple)):
        return cur[-1] if cur else None
    return cur


def _walk(record: dict, path: str):
    """The value at a dotted path of the record as it is (a list stays a list), or None."""
    cur = record
    for part in path.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def _on_scale(x: float, log: bool) -> float:
    return math.log(x) if log and x > 0 else (math.nan if log else x)


#: below this fraction of the gate's bulk ESS a chain is read as not mixing at its length (ESS grows at most
#: linearly in the draws, so reaching the gate would take more than 1 / fraction times the draws: the reading
#: of Gadd et al.'s chains, whose ESS grew like n^0.24, not like n); above it, longer chains are the compute
MIXING_FRACTION = 0.25


def _unconverged(reason: str, proj: dict) -> dict:
    """NOT_ASSESSABLE for chains far from the gate; NEEDS_COMPUTE (longer chains) for chains close to it."""
    import re

    from gpbayes_repro.gates import MIN_ESS

    ess = [float(x) for x in re.findall(r"min bulk ESS ([0-9.eE+-]+)", reason)]
    rhat = [float(x) for x in re.findall(r"R-hat ([0-9.eE+-]+)", reason)]
    if ess and min(ess) >= MIXING_FRACTION * MIN_ESS:
        factor = MIN_ESS / min(ess)
        return {"state": "NEEDS_COMPUTE", "length_factor": factor, "tier": "decide",
                "detail": (f"{reason}; the chains are close to the gate: about {factor:.2g}x the draws would reach "
                           f"bulk ESS {MIN_ESS:g} if ESS grows linearly (longer chains, not more of them)")}
    worst = (f" (worst bulk ESS {min(ess):.3g}, below {MIXING_FRACTION:g} of the gate's {MIN_ESS:g}"
             + (f"; worst R-hat {max(rhat):.3g}" if rhat else "") + ")") if ess else ""
    return {"state": "NOT_ASSESSABLE", "detail": f"the sampler does not mix at this length{worst}: {reason}"}


def final_state(record: dict, entry: dict | None = None, *, cpu_s_per_unit: float | None = None) -> dict:
    """The final state of one claim record (a dict: ``state`` in :data:`STATES`, ``detail``, and the numbers).

    ``entry``: the claim's registry record (:mod:`gpbayes_repro.registry`); its optional
    ``projection`` block says how to project: ``scale`` (``log`` for a ratio whose interval
    is built on logs, else ``linear``), ``count`` (the dotted path in the record of the
    replicate count now), ``level`` (the interval's level, default the record's or 0.95),
    ``data_limit`` ({``count``, ``unit``, ``why``}: the most replicates the paper's data allow),
    ``open_part`` ({``estimate``, ``interval``, ``threshold``, ``side``}: dotted paths and the threshold of the
    part of a two-part claim left open, projected in place of the record's interval while undecided),
    ``se_floor`` (the dotted path of the part of the s.e. no replicate count removes, e.g. a fixed
    test set's), and ``equivalence`` ([a, b] from the paper's words, on the interval's scale).
    ``cpu_s_per_unit``: measured CPU seconds per replicate (:func:`cpu_per_unit`).
    """
    verdict = record.get("verdict") or ("PASS" if record.get("passed") else "FAIL")
    proj = dict((entry or {}).get("projection") or {})
    iv = record.get("interval") or {}
    on = proj.get("open_part")
    if on and record.get("verdict") not in ("PASS", "FAIL"):
        # the part of a two-part claim that is left open (the registry names it: estimate, interval, threshold)
        lo_hi = _walk(record, on["interval"])
        lo_hi = lo_hi if isinstance(lo_hi, (list, tuple)) and len(lo_hi) == 2 else [None, None]
        iv = {"estimate": _dig(record, on["estimate"]), "lo": lo_hi[0], "hi": lo_hi[1],
              "threshold": on["threshold"], "side": on["side"]}
    eq = proj.get("equivalence")
    lo, hi, est = _num(iv.get("lo")), _num(iv.get("hi")), _num(iv.get("estimate"))
    reason = str(record.get("reason") or "")
    if proj.get("undecidable_on_data"):
        # pre-registered in the registry: the paper's data cannot be had (an unrecoverable draw), so no design of
        # ours tests the sentence -- whatever our own design's verdict, which the detail keeps for information
        return {"state": "UNDECIDABLE_ON_DATA",
                "detail": f"{' '.join(str(proj['undecidable_on_data']).split())} (our design's verdict, for "
                          f"information: {verdict}{'; ' + reason if reason else ''})"}
    if verdict in ("PASS", "FAIL"):
        return {"state": verdict, "detail": "decided on its interval" if iv else "decided"}
    # equivalence first: an interval inside the paper's own margin is an answer even when a gate failed elsewhere
    if eq is not None and math.isfinite(lo) and math.isfinite(hi) and eq[0] <= lo and hi <= eq[1]:
        kind = (entry or {}).get("claim_type", "difference")
        words = ("the stated difference did not reproduce: the effect lies within the margin the paper's words "
                 "fix" if kind == "difference" else "reproduced as an equivalence")
        return {"state": "EQUIVALENT", "detail": f"interval [{lo:.4g}, {hi:.4g}] inside [{eq[0]:g}, {eq[1]:g}]: {words}",
                "margin": list(eq)}
    if "not converged" in reason:
        return _unconverged(reason, proj)
    thr = iv.get("threshold")
    side = iv.get("side")
    log = proj.get("scale") == "log"
    level = float(proj.get("level") or iv.get("level") or 0.95)
    n_now = _num(_dig(record, proj.get("count")))
    if side == "between" and isinstance(thr, (list, tuple)):
        # the nearer end of the range decides
        ends = [_num(t) for t in thr]
        thr = min(ends, key=lambda t: abs(_on_scale(est, log) - _on_scale(t, log)))
    thr = _num(thr)
    se = _num(iv.get("se"))
    if not math.isfinite(se):
        se = se_from_interval(_on_scale(lo, log), _on_scale(hi, log), level)
    out = {"n_now": n_now if math.isfinite(n_now) else None, "level": level, "power": POWER}
    need = (project(_on_scale(est, log), se, _on_scale(thr, log), n_now, level=level)
            if math.isfinite(n_now) else math.nan)
    out["count_80"] = need if math.isfinite(need) else None
    floor = _num(_dig(record, proj.get("se_floor"))) if proj.get("se_floor") else math.nan
    if math.isfinite(floor) and floor > 0:
        # a part of the s.e. that no count of replicates removes (the paper's fixed test set): the smallest
        # effect any count could detect is (z_a + z_b) x that part
        z = float(stats.norm.ppf((1.0 + level) / 2.0)) + float(stats.norm.ppf(POWER))
        gap = abs(_on_scale(est, log) - _on_scale(thr, log))
        if gap < z * floor:
            return {**out, "state": "UNDECIDABLE_ON_DATA", "mde": z * floor,
                    "detail": (f"the smallest effect the paper's data can detect at 80 % power, with infinitely many "
                               f"replicates, is {z * floor:.3g} (s.e. {floor:.3g} from the data alone); the "
                               f"estimate lies {gap:.3g} from the threshold. "
                               f"{(proj.get('data_limit') or {}).get('why', '')}").strip()}
    limit = proj.get("data_limit")
    if limit is not None and math.isfinite(se) and math.isfinite(n_now):
        n_max = float(limit["count"])
        mde = minimum_detectable_effect(se, n_now, n_max, level=level)
        if not math.isfinite(need) or need > n_max:
            gap = abs(_on_scale(est, log) - _on_scale(thr, log))
            return {**out, "state": "UNDECIDABLE_ON_DATA", "mde": mde, "data_limit": n_max,
                    "detail": (f"at the paper's {n_max:g} {limit.get('unit', 'replicates')} the smallest detectable "
                               f"effect is {mde:.3g}{' on the log scale' if log else ''} at 80 % power; the "
                               f"estimate lies {gap:.3g} from the threshold. {limit.get('why', '')}").strip()}
    if not math.isfinite(need):
        why = (proj.get("not_projected") or ("no replicate count is recorded for this claim" if not
                                              math.isfinite(n_now) else "the interval is unbounded: its s.e. is unknown"))
        return {**out, "state": "NEEDS_COMPUTE", "detail": f"{reason}; count not projected: {why}".strip("; ")}
    unit = proj.get("unit", "replicates")
    if need > n_now:
        extra = need - n_now
        detail = f"{need:.0f} {unit} for 80 % power (now {n_now:g})"
    else:
        # the count already reaches the 80 %-power count: the interval missed by the chance the power leaves; what
        # decides it with that probability is a fresh run of the same size (not "+0")
        extra = n_now
        detail = (f"{need:.3g} {unit} would decide it with 80 % probability and {n_now:g} ran: the interval missed "
                  f"its threshold by the 20 % chance that power leaves; a fresh run of {n_now:g} {unit} decides it "
                  "with that probability")
    if cpu_s_per_unit is not None:
        out["cpu_s_per_unit"] = cpu_s_per_unit
        out["cpu_min_projected"] = extra * cpu_s_per_unit / 60.0
        detail += (f"; {cpu_s_per_unit:.3g} CPU-s per unit measured, so +{extra * cpu_s_per_unit / 60.0:.3g} "
                   "CPU-min")
    budget = (entry or {}).get("budget") or {}
    tier = None
    if "cpu_min_projected" in out:
        for name in ("default", "decide", "paper"):
            cap = budget.get(f"{name}_cpu_min")
            if cap is not None and out["cpu_min_projected"] <= float(cap):
                tier = name
                break
    out["tier"] = tier or ("cluster" if "cpu_min_projected" in out else None)
    if out["tier"]:
        detail += f"; tier that would run it: {out['tier']}"
    return {**out, "state": "NEEDS_COMPUTE", "detail": detail}
