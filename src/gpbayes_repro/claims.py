"""Reproduction claims: one record format and one renderer for every paper.

Each paper's experiments declare the claims the paper makes.  A claim record
is a JSON object::

    {"id": "...", "statement": "...", "measured": {...numbers...},
     "paper": {...the paper's numbers...} | null, "passed": true | false}

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

__all__ = ["validate_claim", "write_claims", "read_claims", "render_html"]

_KEYS = {"id", "statement", "measured", "paper", "passed"}


def validate_claim(claim: dict) -> dict:
    missing = _KEYS - set(claim)
    extra = set(claim) - _KEYS
    if missing or extra:
        raise ValueError(f"claim {claim.get('id', '?')!r}: missing keys {sorted(missing)}, unknown keys {sorted(extra)}")
    if not isinstance(claim["passed"], bool):
        raise ValueError(f"claim {claim['id']!r}: 'passed' must be a bool, got {claim['passed']!r}")
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
        "n_passed": sum(c["passed"] for c in records),
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
             "table{border-collapse:collapse;margin-bottom:2em}.PASS{background:#cfc}.FAIL{background:#fcc}</style>",
             "</head><body><h1>Reproduction claims</h1>"]
    for doc in docs:
        parts.append(f"<h2>{html.escape(doc['paper'])} &mdash; {doc['n_passed']}/{doc['n_claims']} pass "
                     f"(scale: {html.escape(doc['scale'])})</h2>")
        parts.append("<table><tr><th>claim</th><th>statement</th><th>measured</th><th>paper</th><th>verdict</th></tr>")
        for c in doc["claims"]:
            verdict = "PASS" if c["passed"] else "FAIL"
            parts.append(f"<tr><td>{html.escape(c['id'])}</td><td>{html.escape(c['statement'])}</td>"
                         f"<td>{_fmt(c['measured'])}</td><td>{_fmt(c['paper'])}</td>"
                         f"<td class='{verdict}'>{verdict}</td></tr>")
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts)
