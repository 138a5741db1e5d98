"""Reproduction claims: one record format and one renderer for every paper.

Each paper's experiments declare the claims the paper makes.  A claim record
is a JSON object::

    {"id": "...", "statement": "...", "measured": {...numbers...},
     "paper": {...the paper's numbers...} | null, "passed": true | false,
     "verdict": "PASS" | "FAIL" | "INCONCLUSIVE", "reason": "...",
     "interval": {"quantity": ..., "estimate": x, "lo": a, "hi": b, "threshold": t,
                  "side": "above" | "below" | "between", "method": "..."} | null}

Three outcomes (``decide``): a comparative claim is decided on an interval
of the quantity it compares, not on a point: PASS when the whole interval
lies on the claim's side of its threshold, FAIL when it lies wholly on the
other side, INCONCLUSIVE otherwise.  A claim resting on chains that fail the
convergence gate (split R-hat > 1.05 or bulk ESS < 100 on the quantities
used, ``convergence_gate``) is INCONCLUSIVE whatever its point value, and so
is a claim with no comparable case.  Records written before the three
outcomes (``passed`` only) read as PASS/FAIL.  ``passed`` is kept and is
true exactly for PASS.

``write_claims`` stores the records of one paper in
``results/claims/<paper>.json`` with the scale and provenance; the report
renders every such file with ``render_html``.  A claim is never edited by
hand: it is computed from the results the workflow produced.
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path

import numpy as np

from gpbayes_repro import io
from gpbayes_repro import papers as _papers
from gpbayes_repro.gates import MAX_RHAT, MIN_ESS  # the convergence gate (shared with final_states)

__all__ = ["VERDICTS", "decide", "decide_count", "welch_interval", "finite_or_none", "convergence", "bootstrap_ratio",
           "convergence_gate", "directional_gate", "validate_claim", "write_claims",
           "read_claims", "render_html", "deciding_numbers", "PAPERS", "slug", "finalise",
           "paper_summary", "paper_summary_html"]

_KEYS = {"id", "statement", "measured", "paper", "passed"}
#: ``quote``: the paper's sentence verbatim with where it stands ({"text", "where"}); ``rationale``: one line on
#: why this statistic and threshold encode it; ``paper_verdict``: the same encoding run on the paper's own
#: published numbers (where the paper publishes what the claim reads); ``encoding_change``: a changed encoding
#: names the verdict of the old one beside the new
_OPTIONAL = {"verdict", "reason", "interval", "figures", "quote", "rationale", "paper_verdict", "encoding_change",
             # issue 32: written by write_claims from the registry (gpbayes_repro.registry) and final_states
             "kind", "encoding", "final_state"}
VERDICTS = ("PASS", "FAIL", "INCONCLUSIVE")


def decide(lo: float, hi: float, threshold, side: str = "above") -> str:
    """PASS / FAIL / INCONCLUSIVE of "the quantity is ``side`` ``threshold``" given its interval [lo, hi].

    ``side="above"``: the claim is quantity >= threshold; ``"below"``: quantity <= threshold;
    ``"between"``: threshold = (a, b) and a <= quantity <= b.
    """
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
        return "INCONCLUSIVE"
    if side == "above":
        return "PASS" if lo >= threshold else "FAIL" if hi < threshold else "INCONCLUSIVE"
    if side == "below":
        return "PASS" if hi <= threshold else "FAIL" if lo > threshold else "INCONCLUSIVE"
    if side == "between":
        a, b = threshold
        if a <= lo and hi <= b:
            return "PASS"
        return "FAIL" if hi < a or lo > b else "INCONCLUSIVE"
    raise ValueError(f"side must be 'above', 'below' or 'between', got {side!r}")


def bootstrap_ratio(num, den, rng, *, n_boot: int = 4000, level: float = 0.95,
                    aggregate=None) -> tuple[float, float, float]:
    """mean(num) / mean(den) and its percentile bootstrap interval.

    ``num`` and ``den`` are independent replicates (e.g. per-chain
    efficiencies of two methods); each is resampled with replacement on its
    own.  ``den`` may be a list of several replicate sets with ``aggregate``
    (e.g. ``np.max``: the best of several methods) applied to their means in
    every bootstrap draw.  With a single replicate on any side the interval is
    unknown (NaN, NaN): nothing about the spread can be said.
    """
    import numpy as np

    num = np.asarray(num, dtype=float)
    dens = [np.asarray(d, dtype=float) for d in den] if aggregate is not None else [np.asarray(den, dtype=float)]
    agg = aggregate if aggregate is not None else (lambda x, axis=0: np.take(x, 0, axis=axis))
    est = float(num.mean() / agg(np.array([d.mean() for d in dens]), axis=0))
    if num.size < 2 or any(d.size < 2 for d in dens):
        return est, math.nan, math.nan
    a = num[rng.integers(0, num.size, size=(n_boot, num.size))].mean(axis=1)
    b = agg(np.stack([d[rng.integers(0, d.size, size=(n_boot, d.size))].mean(axis=1) for d in dens]), axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = a / b
    lo, hi = np.nanquantile(r, [(1 - level) / 2, (1 + level) / 2])
    return est, float(lo), float(hi)


def convergence_gate(rhat, ess, *, max_rhat: float = MAX_RHAT, min_ess: float = MIN_ESS) -> str | None:
    """None when every R-hat <= max_rhat and every ESS >= min_ess; otherwise the reason (for INCONCLUSIVE)."""
    import numpy as np

    rhat, ess = np.atleast_1d(np.asarray(rhat, dtype=float)), np.atleast_1d(np.asarray(ess, dtype=float))
    worst_r, worst_e = float(np.nanmax(rhat)), float(np.nanmin(ess))
    if not math.isfinite(worst_r) or worst_r > max_rhat or not math.isfinite(worst_e) or worst_e < min_ess:
        return (f"not converged: max split R-hat {worst_r:.3g} (gate {max_rhat}), min bulk ESS {worst_e:.3g} "
                f"(gate {min_ess:g})")
    return None


def directional_gate(verdict: str, gates: dict, *, max_rhat: float = MAX_RHAT,
                     min_ess: float | None = MIN_ESS) -> tuple[str, str | None]:
    """Gate a verdict on the chains whose failure to converge would favour it (issue 26 section 3).

    An unconverged chain usually overstates its ESS; so for "A is more efficient than B"
    a PASS needs A's chains converged and a FAIL needs B's.  ``gates`` maps a verdict to
    the (R-hat, ESS) arrays of the chains that verdict rests on (``None`` or a missing
    verdict: nothing to gate; the ESS array may be ``None`` where only R-hat is
    gated).  Returns (verdict, reason): INCONCLUSIVE with the reason when the chains
    the verdict rests on fail the gate, else the verdict unchanged and ``None``.
    """
    g = gates.get(verdict)
    if g is None:
        return verdict, None
    rhat, ess = g
    if len(np.atleast_1d(rhat)) == 0:
        return verdict, None
    if ess is None or min_ess is None:
        worst = float(np.nanmax(np.asarray(rhat, dtype=float)))
        why = (None if math.isfinite(worst) and worst <= max_rhat
               else f"not converged: max R-hat {worst:.3g} (gate {max_rhat})")
    else:
        why = convergence_gate(rhat, ess, max_rhat=max_rhat, min_ess=min_ess)
    return ("INCONCLUSIVE", f"{verdict} would rest on chains that are {why}") if why else (verdict, None)


#: one id style for every paper: lower-case words and numbers joined by hyphens ("table1-ep-ge-la", "claim2a")
ID_PATTERN = r"[a-z0-9]+(-[a-z0-9]+)*"


def slug(text: str) -> str:
    """``text`` in the id style (e.g. a user data set's name ``My_Data`` -> ``my-data``)."""
    import re

    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-") or "x"


def finite_or_none(x):
    """A float for the claims JSON: NaN and infinities become None (JSON has neither)."""
    x = float(x)
    return x if math.isfinite(x) else None


def decide_count(n_win: int, n_undecided: int, n_total: int, more_than: float) -> str:
    """Verdict of "more than ``more_than`` of the cases are wins" when each case is decided on its own interval.

    ``n_win`` cases are wins (interval on the claim's side), ``n_undecided`` straddle; the rest
    are losses.  PASS when the decided wins alone exceed the bar, FAIL when wins plus undecided
    cannot reach it, INCONCLUSIVE otherwise (the undecided cases decide it).
    """
    bar = more_than * n_total
    if n_total == 0:
        return "INCONCLUSIVE"
    if n_win > bar:
        return "PASS"
    return "FAIL" if n_win + n_undecided <= bar else "INCONCLUSIVE"


def welch_interval(mean_a, sd_a, n_a, mean_b, sd_b, n_b, level: float = 0.95) -> tuple[float, float, float]:
    """mean_a - mean_b with its Welch t interval (independent replicates, e.g. chains of two samplers).

    With fewer than two replicates on a side, or an unknown s.d., the interval is (NaN, NaN).
    """
    from scipy import stats

    diff = float(mean_a - mean_b)
    if min(n_a, n_b) < 2 or not (math.isfinite(sd_a) and math.isfinite(sd_b)):
        return diff, math.nan, math.nan
    va, vb = sd_a**2 / n_a, sd_b**2 / n_b
    se = math.sqrt(va + vb)
    if se == 0:
        return diff, diff, diff
    df = (va + vb) ** 2 / (va**2 / (n_a - 1) + vb**2 / (n_b - 1))
    h = float(stats.t.ppf((1 + level) / 2, df)) * se
    return diff, diff - h, diff + h


def convergence(draws) -> dict:
    """Rank-normalised split R-hat (max over parameters) and bulk ESS (min) of (chain, draw, param) draws.

    Vehtari et al. (2021) via ``gpbayes.diagnostics``; what :func:`convergence_gate` judges.
    """
    import numpy as np

    from gpbayes import diagnostics

    a = np.asarray(draws, dtype=float)
    if a.ndim == 2:
        a = a[:, :, None]
    rh = [diagnostics.split_rhat(a[:, :, j], rank_normalize=True) for j in range(a.shape[2])]
    es = [diagnostics.ess(a[:, :, j], method="bulk") for j in range(a.shape[2])]
    return {"max_rank_rhat": float(np.max(rh)), "min_bulk_ess": float(np.min(es))}


def validate_claim(claim: dict) -> dict:
    import re

    if not isinstance(claim.get("id"), str) or not re.fullmatch(ID_PATTERN, claim["id"]):
        raise ValueError(f"claim id {claim.get('id')!r} is not in the one id style {ID_PATTERN!r} "
                         "(lower-case words and numbers joined by hyphens)")
    missing = _KEYS - set(claim) - ({"passed"} if "verdict" in claim else set())
    extra = set(claim) - _KEYS - _OPTIONAL
    if missing or extra:
        raise ValueError(f"claim {claim.get('id', '?')!r}: missing keys {sorted(missing)}, unknown keys {sorted(extra)}")
    if "verdict" in claim:
        if claim["verdict"] not in VERDICTS:
            raise ValueError(f"claim {claim['id']!r}: verdict must be one of {VERDICTS}, got {claim['verdict']!r}")
        if "passed" in claim and claim["passed"] != (claim["verdict"] == "PASS"):
            raise ValueError(f"claim {claim['id']!r}: passed={claim['passed']} contradicts verdict {claim['verdict']}")
        if claim["verdict"] == "INCONCLUSIVE" and not claim.get("reason"):
            raise ValueError(f"claim {claim['id']!r}: an INCONCLUSIVE verdict needs its reason")
        claim["passed"] = claim["verdict"] == "PASS"
    else:
        if not isinstance(claim["passed"], bool):
            raise ValueError(f"claim {claim['id']!r}: 'passed' must be a bool, got {claim['passed']!r}")
        claim["verdict"] = "PASS" if claim["passed"] else "FAIL"
    figs = claim.get("figures")
    if figs is not None and (not isinstance(figs, list) or not all(isinstance(f, str) for f in figs)):
        raise ValueError(f"claim {claim['id']!r}: 'figures' must be a list of file paths, got {figs!r}")
    if not isinstance(claim["measured"], dict) or not claim["measured"]:
        raise ValueError(f"claim {claim['id']!r}: 'measured' must hold the numbers behind the verdict")
    for k, v in claim["measured"].items():
        if isinstance(v, float) and math.isnan(v):
            raise ValueError(f"claim {claim['id']!r}: measured value {k!r} is NaN")
        if isinstance(v, float) and math.isinf(v):
            raise ValueError(f"claim {claim['id']!r}: measured value {k!r} is infinite (record null instead)")
    return claim


def finalise(paper: str, records: list[dict], *, benchmarks="benchmarks") -> list[dict]:
    """Each record with the registry's words (:func:`gpbayes_repro.registry.annotate`) and its final state.

    ``final_state`` (:func:`gpbayes_repro.final_states.final_state`): PASS, FAIL, EQUIVALENT,
    UNDECIDABLE_ON_DATA, NOT_ASSESSABLE or NEEDS_COMPUTE with its detail; the CPU per replicate
    of a NEEDS_COMPUTE claim is read from the run's Snakemake ``benchmarks`` directory (the rules
    the registry's ``projection.cost_rules`` names).
    """
    from gpbayes_repro import final_states, registry

    out = []
    for rec in records:
        rec = registry.annotate(paper, rec)
        ent = registry.entry(paper, rec["id"])
        proj = ent.get("projection") or {}
        cpu = None
        if proj.get("cost_rules") and proj.get("count"):
            units = final_states._num(final_states._dig(rec, proj["count"]))
            # the rules that ran the count found first (``cost_rules_by_count``: a count path -> its rules)
            paths = proj["count"] if isinstance(proj["count"], (list, tuple)) else [proj["count"]]
            found = next((p for p in paths if final_states._dig(rec, p) is not None), None)
            rules = (proj.get("cost_rules_by_count") or {}).get(found, proj["cost_rules"])
            if math.isfinite(units) and units > 0:
                # the CPU of one more count unit: the rules' CPU over the units they ran
                cpu = final_states.cpu_per_unit(benchmarks, rules, units)
        state = final_states.final_state(rec, ent, cpu_s_per_unit=cpu)
        rec["final_state"] = {k: finite_or_none(v) if isinstance(v, float) else v for k, v in state.items()}
        out.append(rec)
    return out


def write_claims(paper: str, claims: list[dict], path, *, scale: str, config=None, seed=None,
                 registry: bool | None = None, benchmarks="benchmarks") -> Path:
    """Validate the records of one paper, add the registry's words and final states, and write them atomically.

    ``registry``: None (default) annotates when the paper has a registry file
    (``gpbayes_repro/registry/<paper>.yaml``; an intermediate file such as ``pm_gpc_capacity``
    has none and is annotated where it is merged); False skips it (toy records in tests).
    """
    if registry is None:
        from gpbayes_repro.registry import DIR

        registry = (DIR / f"{paper}.yaml").is_file()
    records = [validate_claim(dict(c)) for c in claims]
    ids = [c["id"] for c in records]
    if len(set(ids)) != len(ids):
        raise ValueError(f"duplicate claim ids in {paper}: {ids}")
    if registry:
        records = finalise(paper, records, benchmarks=benchmarks)
    doc = {
        "paper": paper,
        "scale": scale,
        "n_passed": sum(c["verdict"] == "PASS" for c in records),
        "n_failed": sum(c["verdict"] == "FAIL" for c in records),
        "n_inconclusive": sum(c["verdict"] == "INCONCLUSIVE" for c in records),
        "n_claims": len(records),
        "claims": records,
        "provenance": {k: v for k, v in io.provenance(config, seed).items() if k != "config"},
    }
    if registry:
        # the claims of the paper (not its checks) by final state
        doc["final_states"] = {s: sum(c["final_state"]["state"] == s for c in records if c["kind"] == "claim")
                               for s in _final_states()}
        doc["n_checks"] = sum(c["kind"] == "check" for c in records)
    with io.atomic_path(path) as tmp:
        # allow_nan=False: NaN/inf are not JSON; a claim must record them as null
        tmp.write_text(json.dumps(doc, indent=2, default=float, allow_nan=False) + "\n")
    return Path(path)


def _final_states() -> tuple:
    from gpbayes_repro.final_states import STATES

    return STATES


def read_claims(path) -> dict:
    with open(path) as fh:
        return json.load(fh)


#: experiment key of a claims file -> the paper it reproduces (the claims page's headings; gpbayes_repro.papers)
PAPERS = {p.key: p.title for p in _papers.REGISTRY}


def _fmt(v) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, dict):
        return ", ".join(f"{k} = {_fmt(x)}" for k, x in v.items())
    if isinstance(v, list):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    if v is None:
        return "&mdash;"
    return html.escape(str(v))


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def deciding_numbers(claim: dict, k: int = 3) -> str:
    """The one-line evidence of a claim: its interval against the threshold, else its first ``k`` scalar numbers."""
    iv = claim.get("interval")
    if iv and iv.get("estimate") is not None:
        thr = iv.get("threshold")
        rel = {"above": "&ge;", "below": "&le;", "between": "in"}.get(iv.get("side"), "vs")
        span = (f" [{_fmt(iv.get('lo'))}, {_fmt(iv.get('hi'))}]"
                if iv.get("lo") is not None and iv.get("hi") is not None else " [interval unknown]")
        return (f"{html.escape(str(iv.get('quantity', 'quantity')))} = {_fmt(iv.get('estimate'))}{span}; "
                f"claim: {rel} {_fmt(thr)}")
    nums = [(key, v) for key, v in claim["measured"].items() if _is_number(v)][:k]
    if nums:
        return "; ".join(f"{html.escape(str(key))} = {_fmt(v)}" for key, v in nums)
    return "see the measurement"


def _link(path: str, page_dir: str) -> str:
    import os

    href = os.path.relpath(path, page_dir) if page_dir else path
    return f"<a href='{html.escape(href)}'>{html.escape(Path(path).name)}</a>"


def render_html(docs: list[dict], *, figures: dict | None = None, trouble: dict | None = None,
                page_dir: str = "results/claims", decide: dict | None = None, decide_note: str | None = None) -> str:
    """The claims page: overall summary, then per paper a table with one line per claim.

    ``figures``: experiment key -> the figure files its claims rest on (a claim's own
    ``figures`` list takes precedence); links are relative to ``page_dir``.
    ``trouble``: :func:`gpbayes_repro.trouble.scan` output; runs with numerical
    trouble (jitter, non-converged approximations, failed estimates) are listed at
    the top and counted in their paper's heading.
    ``decide``: paper key -> the committed decide tier's claims document (``benchmarks/results/decide_scale``);
    ``decide_note``: whether they are fresh (:func:`gpbayes_repro.upstream.describe`) -- stale ones are shown
    struck through with the note, never as if current.
    """
    decide = decide or {}
    stale = bool(decide) and not str(decide_note or "").startswith("computed from the current")
    figures = figures or {}
    runs = (trouble or {}).get("runs", [])
    styles = ("body{font-family:sans-serif;max-width:80em}td,th{border:1px solid #999;padding:4px 8px;"
              "vertical-align:top}table{border-collapse:collapse;margin-bottom:2em}.PASS{background:#cfc}"
              ".FAIL{background:#fcc}.INCONCLUSIVE{background:#ffd}.warn{background:#fed}.EQUIVALENT{background:#def}"
              ".UNDECIDABLE_ON_DATA{background:#eee}.NOT_ASSESSABLE{background:#fdd}.NEEDS_COMPUTE{background:#ffd}"
              "details{font-size:90%}")
    parts = ["<html><head><meta charset='utf-8'><title>gpbayes reproduction claims</title>",
             f"<style>{styles}</style></head><body><h1>Reproduction claims</h1>"]
    # -- overall summary -------------------------------------------------------------------
    scales = sorted({d["scale"] for d in docs})
    all_v = [validate_claim(dict(c))["verdict"] for d in docs for c in d["claims"]]
    parts.append(f"<p><b>{len(all_v)} claims from {len(docs)} papers, scale {html.escape(', '.join(scales))}: "
                 + ", ".join(f"{all_v.count(v)} {v}" for v in VERDICTS) + ".</b> "
                 "PASS: the interval (or, without replicates, the value) lies on the claim's side of its "
                 "threshold; FAIL: on the other side; INCONCLUSIVE: the interval straddles the threshold, the "
                 "chains it rests on did not converge, or there is nothing comparable (the reason is given).</p>")
    states = [(c.get("final_state") or {}).get("state") for d in docs for c in d["claims"]
              if c.get("kind", "claim") == "claim"]
    if any(states):
        from gpbayes_repro.final_states import REASON_CODES, STATES

        parts.append(f"<p><b>Final states of the {len(states)} claims of the papers</b> (the checks are counted "
                     "apart): " + ", ".join(f"{states.count(v)} {v}" for v in STATES) + ". "
                     + " ".join(f"<i>{html.escape(k)}</i>: {html.escape(v)}." for k, v in REASON_CODES.items())
                     + "</p>")
    if decide:
        parts.append(f"<p><b>Decide tier</b> (committed outputs, <code>benchmarks/results/decide_scale/</code>): "
                     f"{html.escape(str(decide_note or ''))}.</p>")
    parts.append("<table><tr><th>paper</th>" + "".join(f"<th>{v}</th>" for v in VERDICTS)
                 + "<th>runs with numerical trouble</th></tr>")
    for d in docs:
        vs = [validate_claim(dict(c))["verdict"] for c in d["claims"]]
        n_tr = sum(1 for r in runs if _experiment_of(r["path"]) in _DIRS.get(d["paper"], (d["paper"],)))
        parts.append(f"<tr><td><a href='#{html.escape(d['paper'])}'>{html.escape(PAPERS.get(d['paper'], d['paper']))}"
                     "</a></td>" + "".join(f"<td>{vs.count(v)}</td>" for v in VERDICTS)
                     + f"<td{' class=warn' if n_tr else ''}>{n_tr}</td></tr>")
    parts.append("</table>")
    if trouble is not None:
        parts.append(f"<h2>Numerical trouble</h2><p>{trouble['n_files']} result files scanned"
                     + (f" ({trouble['n_other_scale']} from another scale skipped)" if trouble.get("n_other_scale")
                        else "") + f": {len(runs)} record jitter, a non-converged approximation or a failed "
                     "estimate.</p>")
        if runs:
            parts.append("<table><tr><th>file</th><th>jitter events</th><th>largest jitter</th>"
                         "<th>not converged</th><th>failed estimates</th><th>recorded in</th></tr>")
            for r in runs:
                parts.append(f"<tr class=warn><td>{html.escape(r['path'])}</td><td>{r['n_jitter']}</td>"
                             f"<td>{r['max_jitter']:.3g}</td><td>{r['n_not_converged']}</td>"
                             f"<td>{r['n_failed_estimates']}</td><td>{html.escape(', '.join(r['where'][:4]))}"
                             f"{' ...' if len(r['where']) > 4 else ''}</td></tr>")
            parts.append("</table>")
    # -- one table per paper ---------------------------------------------------------------
    for d in docs:
        recs = [validate_claim(dict(c)) for c in d["claims"]]
        vs = [c["verdict"] for c in recs]
        counts = ", ".join(f"{vs.count(v)} {v}" for v in VERDICTS)
        parts.append(f"<h2 id='{html.escape(d['paper'])}'>{html.escape(PAPERS.get(d['paper'], d['paper']))}</h2>"
                     f"<p>{counts} of {len(recs)} (scale {html.escape(d['scale'])}; claims file "
                     f"<code>results/claims/{html.escape(d['paper'])}.json</code>)</p>")
        parts.append(paper_summary_html(d))
        dec = {c["id"]: c for c in (decide.get(d["paper"]) or {}).get("claims", [])}
        parts.append("<table><tr><th>claim</th><th>statement</th><th>verdict</th><th>final state</th>"
                     + ("<th>decide tier</th>" if decide else "") + "<th>decided by</th><th>figures</th></tr>")
        ordered = ([c for c in recs if c.get("kind", "claim") == "claim"]
                   + [c for c in recs if c.get("kind") == "check"])
        for i, c in enumerate(ordered):
            if c.get("kind") == "check" and (i == 0 or ordered[i - 1].get("kind", "claim") == "claim"):
                parts.append(f"<tr><th colspan={7 if decide else 6}>Checks (diagnostics and software checks, not claims of the "
                             "paper)</th></tr>")
            why = f"<br><small>{html.escape(c['reason'])}</small>" if c.get("reason") else ""
            figs = c.get("figures") or figures.get(d["paper"], [])
            full = (f"<details><summary>full measurement</summary>measured: {_fmt(c['measured'])}"
                    f"<br>paper: {_fmt(c['paper'])}"
                    + (f"<br>interval: {_fmt(c['interval'])}" if c.get("interval") else "") + "</details>")
            q = c.get("quote")
            quote = (f"<br><small><i>&ldquo;{html.escape(q['text'])}&rdquo;</i> ({html.escape(q['where'])})</small>"
                     if q else "")
            quote += f"<br><small>encoding: {html.escape(c['rationale'])}</small>" if c.get("rationale") else ""
            if c.get("paper_verdict"):
                pv = c["paper_verdict"]
                quote += (f"<br><small>the same encoding on the paper's own numbers: <b>{html.escape(pv['verdict'])}"
                          f"</b> {html.escape(pv.get('detail', ''))}</small>")
            if c.get("encoding_change"):
                quote += f"<br><small>encoding changed: {html.escape(c['encoding_change'])}</small>"
            parts.append(f"<tr><td><code>{html.escape(c['id'])}</code></td><td>{html.escape(c['statement'])}{quote}</td>"
                         f"<td class='{c['verdict']}'><b>{c['verdict']}</b>{why}</td>"
                         + _final_cell(c)
                         + ((_final_cell(dec[c["id"]], stale) if c["id"] in dec else "<td>not run</td>") if decide
                            else "")
                         + f"<td>{deciding_numbers(c)}{full}</td>"
                         f"<td>{', '.join(_link(f, page_dir) for f in figs) or '&mdash;'}</td></tr>")
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _final_cell(c: dict, stale: bool = False) -> str:
    fs = c.get("final_state")
    if not fs:
        return "<td>&mdash;</td>"
    if stale:
        return (f"<td><s>{html.escape(fs['state'])}</s><br><small>stale (see the note above): "
                f"{html.escape(str(fs.get('detail', '')))}</small></td>")
    return (f"<td class='{html.escape(fs['state'])}'><b>{html.escape(fs['state'])}</b>"
            f"<br><small>{html.escape(str(fs.get('detail', '')))}</small></td>")


def paper_summary(doc: dict) -> dict:
    """A reader's summary of one paper's claims file (ReScience / AEA data editor style).

    Claims in scope (records of the paper's sentences) and out of scope (the registry's
    ``not_encoded`` sentences, by reason), the final states with each non-PASS/FAIL claim's
    reason code, the checks apart, and the CPU the projections state for the claims that need
    compute.
    """
    from gpbayes_repro import registry

    recs = doc["claims"]
    claims_ = [c for c in recs if c.get("kind", "claim") == "claim"]
    try:
        reg = registry.load(doc["paper"])
    except KeyError:
        reg = {"not_encoded": []}
    out_of_scope = reg.get("not_encoded") or []
    states: dict[str, list[str]] = {}
    for c in claims_:
        states.setdefault((c.get("final_state") or {}).get("state", c["verdict"]), []).append(c["id"])
    need = [c["final_state"].get("cpu_min_projected") for c in claims_
            if (c.get("final_state") or {}).get("state") == "NEEDS_COMPUTE"]
    return {"paper": doc["paper"], "scale": doc.get("scale"), "n_claims": len(claims_),
            "n_checks": len(recs) - len(claims_), "states": states,
            "n_not_encoded": len(out_of_scope),
            "not_encoded_by_kind": {k: sum(1 for r in out_of_scope if r.get("kind") == k)
                                    for k in sorted({r.get("kind", "other") for r in out_of_scope})},
            "needs_compute_cpu_min": [x for x in need if x is not None]}


def paper_summary_html(doc: dict) -> str:
    """:func:`paper_summary` as one paragraph of the claims page."""
    from gpbayes_repro.final_states import REASON_CODES

    s = paper_summary(doc)
    bits = [f"{len(v)} {k}" for k, v in s["states"].items()]
    codes = "; ".join(f"{', '.join(v)}: {REASON_CODES[k]}" for k, v in s["states"].items() if k in REASON_CODES)
    cpu = (f" The claims that need compute state +{sum(s['needs_compute_cpu_min']):.3g} CPU-min in all."
           if s["needs_compute_cpu_min"] else "")
    return (f"<p><b>Summary.</b> {s['n_claims']} claims of the paper in scope ({', '.join(bits) or 'none'}); "
            f"{s['n_checks']} checks; {s['n_not_encoded']} further sentences of the paper not encoded, each with its "
            f"reason in <code>src/gpbayes_repro/registry/{html.escape(s['paper'])}.yaml</code>."
            + (f" Reason codes: {html.escape(codes)}." if codes else "") + cpu + "</p>")


#: experiment key of a claims file -> the results/ directories its runs are in (gpbayes_repro.papers)
_DIRS = {p.key: p.results_dirs for p in _papers.REGISTRY}


def _experiment_of(path: str) -> str:
    parts = Path(path).parts
    return parts[1] if len(parts) > 1 and parts[0] == "results" else parts[0]
