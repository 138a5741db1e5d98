"""The pre-registered claims registry: one YAML file per paper, the one source of each claim's encoding.

``registry/<paper key>.yaml`` holds, for every claim record the workflow writes
(``results/claims/<key>.json``), the paper's sentence verbatim and where it stands, the
statistic, the threshold or margin and its source (``paper text: "..."`` or
``convention: why``), the replication unit, how the count to decide is projected, and
the encoding's history (every change with its commit, date, the verdict before and
after and whether the change was made after a run's verdict was seen).  Records that
are not claims of the paper (diagnostics, software checks) are ``kind: check``.
``not_encoded`` lists the paper's other checkable sentences with the reason each has
no record.

:func:`annotate` is what :func:`gpbayes_repro.claims.write_claims` calls on every
record: it copies the quote and the encoding's words into the record, and refuses a
record whose threshold or side differs from the registry's (the encoding is fixed
here, before a run, not in the code that reads the results).  ``tests/test_registry.py``
checks every quote against the paper's text in ``shared/seeds`` and every committed
claims file against the registry.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

import yaml

__all__ = ["DIR", "KINDS", "SIDES", "load", "load_all", "entry", "validate", "annotate", "RegistryError",
           "normalise"]

DIR = Path(__file__).resolve().parent
KINDS = ("claim", "check")
SIDES = ("above", "below", "between", None)
VERDICTS = ("PASS", "FAIL", "INCONCLUSIVE", None)
_REQUIRED = ("id", "kind", "statistic", "threshold", "side", "unit", "history")
_CLAIM_REQUIRED = ("quote", "where", "threshold_source")
_HISTORY = ("commit", "date", "change", "verdict_before", "verdict_after", "after_results_seen")
_OPTIONAL = ("review", "projection", "budget", "claim_type", "paper_numbers", "statement", "threshold_varies")


class RegistryError(ValueError):
    """A registry file or a claim record disagrees with the registry; the message names the claim and the key."""


def normalise(text: str) -> str:
    """Whitespace collapsed to single spaces: how a quote is compared with the paper's text."""
    return " ".join(str(text).split())


@functools.lru_cache(maxsize=None)
def load(paper: str) -> dict:
    """The registry document of ``paper`` (validated); KeyError naming the known papers if there is none."""
    path = DIR / f"{paper}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in DIR.glob("*.yaml"))
        raise KeyError(f"no claims registry for paper {paper!r}; registered papers: {', '.join(known)}")
    with open(path) as fh:
        doc = yaml.safe_load(fh)
    for rec in (doc or {}).get("claims") or []:
        for h in rec.get("history") or []:
            if isinstance(h, dict) and "date" in h:
                h["date"] = str(h["date"])  # YAML reads 2026-11-26 as a date; the records are JSON
    problems = validate(doc, path.name)
    if problems:
        raise RegistryError(f"{path}:\n  - " + "\n  - ".join(problems))
    return doc


def load_all() -> dict[str, dict]:
    """``paper key -> registry document`` for every registry file."""
    return {p.stem: load(p.stem) for p in sorted(DIR.glob("*.yaml"))}


def entry(paper: str, claim_id: str) -> dict | None:
    """The registry record of one claim (None if the paper's registry has no such id)."""
    for rec in load(paper).get("claims", []):
        if rec["id"] == claim_id:
            return rec
    return None


def validate(doc, name: str = "registry", seed_text: str | None = None) -> list[str]:
    """Every problem of one registry document (an empty list when it is well formed).

    ``seed_text``: the paper's full text; when given, every quote must occur in it verbatim
    (after :func:`normalise`).
    """
    problems: list[str] = []
    if not isinstance(doc, dict) or not isinstance(doc.get("claims"), list):
        return [f"{name}: needs a mapping with a 'claims' list"]
    seen = set()
    norm = normalise(seed_text) if seed_text is not None else None
    for i, rec in enumerate(doc["claims"]):
        cid = rec.get("id", f"#{i}") if isinstance(rec, dict) else f"#{i}"
        if not isinstance(rec, dict):
            problems.append(f"{cid}: not a mapping")
            continue
        if cid in seen:
            problems.append(f"{cid}: duplicate id")
        seen.add(cid)
        missing = [k for k in _REQUIRED if k not in rec]
        if rec.get("kind") == "claim":
            missing += [k for k in _CLAIM_REQUIRED if not rec.get(k)]
        if missing:
            problems.append(f"{cid}: missing {', '.join(missing)}")
        unknown = set(rec) - set(_REQUIRED) - set(_CLAIM_REQUIRED) - set(_OPTIONAL)
        if unknown:
            problems.append(f"{cid}: unknown keys {sorted(unknown)} (allowed: "
                            f"{', '.join(_REQUIRED + _CLAIM_REQUIRED + _OPTIONAL)})")
        if rec.get("kind") not in KINDS:
            problems.append(f"{cid}: kind must be one of {KINDS}, got {rec.get('kind')!r}")
        if rec.get("side") not in SIDES:
            problems.append(f"{cid}: side must be one of {SIDES}, got {rec.get('side')!r}")
        thr = rec.get("threshold")
        if rec.get("side") == "between" and not (isinstance(thr, list) and len(thr) == 2):
            problems.append(f"{cid}: side 'between' needs threshold [a, b], got {thr!r}")
        src = str(rec.get("threshold_source") or "")
        if rec.get("kind") == "claim" and thr is not None and not src.startswith(("paper text", "convention")):
            problems.append(f"{cid}: threshold_source must start with 'paper text' or 'convention', got {src[:40]!r}")
        hist = rec.get("history")
        if not isinstance(hist, list):
            problems.append(f"{cid}: history must be a list (empty if the encoding never changed)")
        else:
            for h in hist:
                lack = [k for k in _HISTORY if not isinstance(h, dict) or k not in h]
                if lack:
                    problems.append(f"{cid}: a history entry lacks {', '.join(lack)}")
                elif h["verdict_before"] not in VERDICTS or h["verdict_after"] not in VERDICTS:
                    problems.append(f"{cid}: history verdicts must be one of {VERDICTS[:-1]} or null")
        if norm is not None and rec.get("quote") and normalise(rec["quote"]) not in norm:
            problems.append(f"{cid}: quote is not verbatim in the paper's text: {normalise(rec['quote'])[:80]!r}")
    for j, rec in enumerate(doc.get("not_encoded") or []):
        if not isinstance(rec, dict) or not rec.get("quote") or not rec.get("reason") or not rec.get("where"):
            problems.append(f"not_encoded #{j}: needs quote, where and reason")
        elif norm is not None and normalise(rec["quote"]) not in norm:
            problems.append(f"not_encoded #{j}: quote is not verbatim in the paper's text: "
                            f"{normalise(rec['quote'])[:80]!r}")
    return problems


def _same(a, b) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    try:
        return math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=1e-12)
    except (TypeError, ValueError):
        return a == b


def annotate(paper: str, record: dict) -> dict:
    """``record`` with the registry's words added (a new dict); RegistryError on a disagreement.

    Adds ``kind``, ``quote`` ({text, where}) and ``encoding`` (statistic, threshold and its
    source, unit, history).  Refuses a record with no registry entry, and one whose
    ``interval`` threshold or side differs from the registry's.
    """
    rec = entry(paper, record["id"])
    if rec is None:
        ids = [c["id"] for c in load(paper).get("claims", [])]
        raise RegistryError(f"claim {record['id']!r} of {paper!r} is not in the registry "
                            f"(src/gpbayes_repro/registry/{paper}.yaml; registered: {', '.join(ids)})")
    iv = record.get("interval") or {}
    if rec.get("threshold") is not None and iv.get("threshold") is not None:
        # a count threshold that scales with the design (``threshold_varies`` says how; the registered value is the
        # default scale's): its side is checked, not its value
        same = _same(iv["threshold"], rec["threshold"]) or bool(rec.get("threshold_varies"))
        if not same or iv.get("side") != rec.get("side"):
            raise RegistryError(f"claim {record['id']!r} of {paper!r}: the record's threshold {iv['threshold']!r} "
                                f"({iv.get('side')}) differs from the registry's {rec['threshold']!r} "
                                f"({rec.get('side')}): change the registry first, with the change in its history")
    out = dict(record)
    out["kind"] = rec["kind"]
    if rec.get("quote"):
        out["quote"] = {"text": normalise(rec["quote"]), "where": rec["where"]}
    out["encoding"] = {k: rec.get(k) for k in ("statistic", "threshold", "side", "threshold_source", "unit")}
    out["encoding"]["history"] = rec.get("history") or []
    if record.get("encoding_change") and not rec.get("history"):
        raise RegistryError(f"claim {record['id']!r} of {paper!r} names an encoding change "
                            f"({record['encoding_change'][:60]!r}...) that its registry history does not record")
    return out
