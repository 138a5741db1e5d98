"""Default-scale against paper-scale verdicts, one row per claim (issue 15, section 6).

Reads the claims files of a default-scale run (``results/claims/<paper>.json``)
and the claims files of whatever targets were run at ``scale=paper`` (kept under
``benchmarks/results/paper_scale/``, since a paper-scale run is not part of the
default pipeline), and writes a Markdown table: paper, claim, the default verdict
with the numbers that decide it, the paper-scale verdict with its numbers, or
"cluster only" with the estimated cost when the paper-scale run is beyond this
machine (more than one CPU-hour).  Nothing is typed in by hand: a verdict comes
from a claims file or is not shown::

    python -m gpbayes_repro.verdict_table results/claims \\
        --paper benchmarks/results/paper_scale --out docs/verdicts.md

A claims file whose ``scale`` is not the one its column says is refused (a smoke
run's leftovers must not pass for a default verdict).
"""

from __future__ import annotations

import argparse
import html
import re
from pathlib import Path

from gpbayes_repro import papers
from gpbayes_repro.claims import PAPERS, deciding_numbers, read_claims

__all__ = ["PAPER_SCALE_CPU_HOURS", "load_scale", "rows", "to_markdown", "main"]

#: estimated CPU-hours of each paper's experiments at ``scale=paper`` on one core of this
#: machine (gpbayes_repro.papers: measured where its note says so, otherwise from per-iteration
#: costs measured at default scale); shown as an estimate for the papers left to a cluster
PAPER_SCALE_CPU_HOURS = {p.key: p.paper_scale_cpu_hours for p in papers.REGISTRY}


def load_scale(directory, scale: str) -> dict[str, dict]:
    """``paper key -> claims document`` of every ``*.json`` in ``directory`` written at ``scale``."""
    directory = Path(directory)
    docs = {}
    if not directory.is_dir():
        return docs
    for path in sorted(directory.glob("*.json")):
        doc = read_claims(path)
        if "claims" not in doc or "paper" not in doc:
            continue
        if doc.get("scale") != scale:
            raise ValueError(f"{path}: written at scale={doc.get('scale')!r}, expected {scale!r}")
        docs[doc["paper"]] = doc
    return docs


def _plain(text: str) -> str:
    """``deciding_numbers`` speaks HTML; the table is Markdown."""
    return html.unescape(re.sub(r"<[^>]+>", "", text)).replace("|", "\\|")


def _cell(claim: dict | None) -> str:
    if claim is None:
        return "not run"
    return f"**{claim['verdict']}** {_plain(deciding_numbers(claim))}"


def _paper_numbers(claim: dict) -> str:
    pv = claim.get("paper_verdict")
    return f"**{pv['verdict']}** {_plain(pv.get('detail', ''))}" if pv else "—"


def rows(default: dict[str, dict], paper: dict[str, dict], before: dict[str, dict] | None = None) -> list[tuple]:
    """(paper, claim id, [before cell,] default cell, paper-scale cell, paper's-own-numbers cell) per claim.

    ``before``: the claims files of an earlier default-scale run (e.g. before a change of encodings or
    intervals): its verdict is shown beside the new one, so a changed verdict names both.
    """
    out = []
    for key in [k for k in PAPERS if k in default] + sorted(set(default) - set(PAPERS)):
        paper_claims = {c["id"]: c for c in paper.get(key, {}).get("claims", [])}
        for claim in default[key]["claims"]:
            if key in paper:
                right = _cell(paper_claims.get(claim["id"]))
            else:
                hours = PAPER_SCALE_CPU_HOURS.get(key)
                right = (f"cluster only (≈ {hours:g} CPU-h estimated)" if hours is not None and hours > 1
                         else "not run")
            row = (key, claim["id"], _cell(claim), right, _paper_numbers(claim))
            if before is not None:
                old = {c["id"]: c for c in before.get(key, {}).get("claims", [])}
                row = row[:2] + (_cell(old.get(claim["id"])),) + row[2:]
            out.append(row)
    return out


def to_markdown(table: list[tuple]) -> str:
    if table and len(table[0]) == 6:
        lines = ["| paper | claim | default scale, before | default scale, now | paper scale | "
                 "same encoding on the paper's own numbers |", "|---|---|---|---|---|---|"]
    else:
        lines = ["| paper | claim | default scale | paper scale | same encoding on the paper's own numbers |",
                 "|---|---|---|---|---|"]
    lines += ["| " + " | ".join(r) + " |" for r in table]
    counts = {}
    col = 3 if table and len(table[0]) == 6 else 2
    for r in table:
        v = r[col].split("**")[1] if "**" in r[col] else "not run"
        counts[v] = counts.get(v, 0) + 1
    summary = ", ".join(f"{counts.get(v, 0)} {v}" for v in ("PASS", "FAIL", "INCONCLUSIVE"))
    return "\n".join(lines) + f"\n\nDefault scale: {summary} of {len(table)}.\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gpbayes_repro.verdict_table", description=__doc__.splitlines()[0])
    ap.add_argument("default", help="claims directory of a default-scale run (results/claims)")
    ap.add_argument("--paper", default="benchmarks/results/paper_scale",
                    help="claims files of the targets run at scale=paper")
    ap.add_argument("--before", help="claims directory of an earlier default-scale run, shown beside")
    ap.add_argument("--out", help="write the Markdown table here (else print it)")
    args = ap.parse_args(argv)
    default = load_scale(args.default, "default")
    if not default:
        raise SystemExit(f"{args.default}: no default-scale claims files (run `snakemake --cores 2` first)")
    before = load_scale(args.before, "default") if args.before else None
    text = to_markdown(rows(default, load_scale(args.paper, "paper"), before))
    if args.out:
        from gpbayes_repro.io import atomic_path

        with atomic_path(args.out) as tmp:
            tmp.write_text(text)
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
