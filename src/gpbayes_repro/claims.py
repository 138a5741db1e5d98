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

from gpbayes import io

__all__ = ["VERDICTS", "decide", "bootstrap_ratio", "convergence_gate", "validate_claim", "write_claims",
           "read_claims", "render_html"]

_KEYS = {"id", "statement", "measured", "paper", "passed"}
_OPTIONAL = {"verdict", "reason", "interval"}
VERDICTS = ("PASS", "FAIL", "INCONCLUSIVE")
#: the convergence gate of every claim that rests on MCMC output
MAX_RHAT, MIN_ESS = 1.05, 100.0


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


def bootstrap_ratio(num, den, rng, *, n_boot: int = 4000, level: float = 0.95) -> tuple[float, float, float]:
    """mean(num) / mean(den) and its percentile bootstrap interval.

    ``num`` and ``den`` are independent replicates (e.g. per-chain
    efficiencies of two methods); each is resampled with replacement on its
    own.  With a single replicate on either side the interval is unknown
    (NaN, NaN): nothing about the spread can be said.
    """
    import numpy as np

    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    est = float(num.mean() / den.mean())
    if num.size < 2 or den.size < 2:
        return est, math.nan, math.nan
    a = num[rng.integers(0, num.size, size=(n_boot, num.size))].mean(axis=1)
    b = den[rng.integers(0, den.size, size=(n_boot, den.size))].mean(axis=1)
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


def validate_claim(claim: dict) -> dict:
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
    if not isinstance(claim["measured"], dict) or not claim["measured"]:
        raise ValueError(f"claim {claim['id']!r}: 'measured' must hold the numbers behind the verdict")
    for k, v in claim["measured"].items():
        if isinstance(v, float) and math.isnan(v):
            raise ValueError(f"claim {claim['id']!r}: measured value {k!r} is NaN")
        if isinstance(v, float) and math.isinf(v):
            raise ValueError(f"claim {claim['id']!r}: measured value {k!r} is infinite (record null instead)")
    return claim


def write_claims(paper: str, claims: list[dict], path, *, scale: str, config=None, seed=None) -> Path:
    records = [validate_claim(dict(c)) for c in claims]
    ids = [c["id"] for c in records]
    if len(set(ids)) != len(ids):
        raise ValueError(f"duplicate claim ids in {paper}: {ids}")
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
    with io.atomic_path(path) as tmp:
        # allow_nan=False: NaN/inf are not JSON; a claim must record them as null
        tmp.write_text(json.dumps(doc, indent=2, default=float, allow_nan=False) + "\n")
    return Path(path)


def read_claims(path) -> dict:
    with open(path) as fh:
        return json.load(fh)


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, dict):
        return ", ".join(f"{k} = {_fmt(x)}" for k, x in v.items())
    if v is None:
        return "&mdash;"
    return html.escape(str(v))


def render_html(docs: list[dict]) -> str:
    """One HTML page with a PASS/FAIL table per paper."""
    parts = ["<html><head><meta charset='utf-8'><title>gpbayes reproduction claims</title>",
             "<style>body{font-family:sans-serif}td,th{border:1px solid #999;padding:4px 8px}"
             "table{border-collapse:collapse;margin-bottom:2em}.PASS{background:#cfc}.FAIL{background:#fcc}"
             ".INCONCLUSIVE{background:#eee}</style>",
             "</head><body><h1>Reproduction claims</h1>"]
    for doc in docs:
        verdicts = [c.get("verdict", "PASS" if c["passed"] else "FAIL") for c in doc["claims"]]
        counts = ", ".join(f"{verdicts.count(v)} {v.lower()}" for v in VERDICTS)
        parts.append(f"<h2>{html.escape(doc['paper'])} &mdash; {counts} of {doc['n_claims']} "
                     f"(scale: {html.escape(doc['scale'])})</h2>")
        parts.append("<table><tr><th>claim</th><th>statement</th><th>measured</th><th>interval</th><th>paper</th>"
                     "<th>verdict</th></tr>")
        for c, verdict in zip(doc["claims"], verdicts):
            iv = c.get("interval")
            iv_txt = (f"{html.escape(str(iv.get('quantity', '')))}: {_fmt(iv.get('estimate'))} "
                      f"[{_fmt(iv.get('lo'))}, {_fmt(iv.get('hi'))}] vs {_fmt(iv.get('threshold'))} "
                      f"({html.escape(str(iv.get('method', '')))})") if iv else "&mdash;"
            reason = f"<br><small>{html.escape(c['reason'])}</small>" if c.get("reason") else ""
            parts.append(f"<tr><td>{html.escape(c['id'])}</td><td>{html.escape(c['statement'])}</td>"
                         f"<td>{_fmt(c['measured'])}</td><td>{iv_txt}</td><td>{_fmt(c['paper'])}</td>"
                         f"<td class='{verdict}'>{verdict}{reason}</td></tr>")
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts)
