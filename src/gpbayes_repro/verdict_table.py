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

from gpbayes_repro.claims import PAPERS, deciding_numbers, read_claims

__all__ = ["PAPER_SCALE_CPU_HOURS", "load_scale", "rows", "to_markdown", "main"]

#: estimated CPU-hours of each paper's experiments at ``scale=paper`` on one core of this
#: machine, from per-iteration costs measured at default scale (README, "Scales"); an
#: estimate, shown as such, for the papers whose paper-scale run is left to a cluster
PAPER_SCALE_CPU_HOURS = {
    "foundation": 0.98,  # measured: the whole run (README, "Scales")
    "pm_gpc": 233.0,     # Table I 8 + Table III 60 + Figs. 3-4 125 + Figs. 5-7 40
    "slice_ma": 20.0,
    "amis": 800.0,
    "sparse_mcmc": 60.0,
    "gplvm": 5.0,       # 1.6 CPU-s per iteration measured with the paper's 500 VB iterations (README, "Scales")
}


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


def rows(default: dict[str, dict], paper: dict[str, dict]) -> list[tuple[str, str, str, str]]:
    """(paper, claim id, default cell, paper-scale cell) for every claim of the default run."""
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
            out.append((key, claim["id"], _cell(claim), right))
    return out


def to_markdown(table: list[tuple[str, str, str, str]]) -> str:
    lines = ["| paper | claim | default scale | paper scale |", "|---|---|---|---|"]
    lines += [f"| {p} | {c} | {d} | {q} |" for p, c, d, q in table]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gpbayes_repro.verdict_table", description=__doc__.splitlines()[0])
    ap.add_argument("default", help="claims directory of a default-scale run (results/claims)")
    ap.add_argument("--paper", default="benchmarks/results/paper_scale",
                    help="claims files of the targets run at scale=paper")
    ap.add_argument("--out", help="write the Markdown table here (else print it)")
    args = ap.parse_args(argv)
    default = load_scale(args.default, "default")
    if not default:
        raise SystemExit(f"{args.default}: no default-scale claims files (run `snakemake --cores 2` first)")
    text = to_markdown(rows(default, load_scale(args.paper, "paper")))
    if args.out:
        from gpbayes_repro.io import atomic_path

        with atomic_path(args.out) as tmp:
            tmp.write_text(text)
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
