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

__all__ = ["PAPER_SCALE_CPU_HOURS", "load_scale", "rows", "to_markdown", "state_rows", "states_markdown",
           "summary_line", "update_file", "markers", "coverage_markdown", "main"]

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


def _state_cell(claim: dict | None) -> str:
    if claim is None:
        return "not run"
    fs = claim.get("final_state")
    if not fs:
        return _cell(claim)
    detail = _plain(html.escape(str(fs.get("detail", ""))))
    if len(detail) > 160:
        detail = detail[:157] + "..."
    return f"**{fs['state']}** {_plain(deciding_numbers(claim))}" + (f" — {detail}" if fs["state"] not in
                                                                      ("PASS", "FAIL") else "")


def state_rows(default: dict[str, dict], decide: dict[str, dict] | None = None) -> list[tuple]:
    """(paper, claim id, kind, default-scale final state, decide-tier final state, paper's own numbers) per record.

    Claims first, then the checks, each in registry order within its paper.
    """
    decide = decide or {}
    out = []
    for kind in ("claim", "check"):
        for key in [k for k in PAPERS if k in default] + sorted(set(default) - set(PAPERS)):
            dec = {c["id"]: c for c in decide.get(key, {}).get("claims", [])}
            for claim in default[key]["claims"]:
                if claim.get("kind", "claim") != kind:
                    continue
                out.append((key, claim["id"], kind, _state_cell(claim),
                            _state_cell(dec.get(claim["id"])) if key in decide else "not run",
                            _paper_numbers(claim)))
    return out


def summary_line(docs: dict[str, dict], label: str) -> str:
    """One sentence of counts: the claims by final state, the checks apart (generated, never typed)."""
    from gpbayes_repro.final_states import STATES

    from gpbayes_repro import registry

    def kind(paper, c):  # a record written before the registry carries no kind: the registry says
        if c.get("kind"):
            return c["kind"]
        try:
            ent = registry.entry(paper, c["id"])
        except KeyError:
            ent = None
        return (ent or {}).get("kind", "claim")

    recs = [(k, c) for k, d in docs.items() for c in d["claims"]]
    cl = [c for k, c in recs if kind(k, c) == "claim"]
    ck = [c for k, c in recs if kind(k, c) == "check"]
    st = [(c.get("final_state") or {}).get("state", c.get("verdict")) for c in cl]
    order = list(STATES) + sorted(set(st) - set(STATES), key=str)
    parts = ", ".join(f"{st.count(s)} {s}" for s in order if st.count(s))
    checks = [(c.get("final_state") or {}).get("state", c.get("verdict")) for c in ck]
    chk = ", ".join(f"{checks.count(s)} {s}" for s in list(STATES) + sorted(set(checks) - set(STATES), key=str)
                    if checks.count(s)) or "none"
    commits = sorted({(d.get("provenance") or {}).get("git_commit", "?")[:7] for d in docs.values()})
    stale = sorted(k for k, d in docs.items() if "final_states" not in d)
    return (f"{label}: {len(cl)} claims of the papers — {parts}; {len(ck)} checks — {chk} "
            f"(claims files of commit {', '.join(commits)}"
            + (f"; written before the claims registry, under earlier encodings and without final states: "
               f"{', '.join(stale)}" if stale else "") + ")")


def states_markdown(default: dict[str, dict], decide: dict[str, dict] | None = None) -> str:
    """The final-state table with its count lines (what README and docs/verdicts.md carry between markers)."""
    lines = ["| paper | claim | kind | default scale | decide tier | same encoding on the paper's own numbers |",
             "|---|---|---|---|---|---|"]
    lines += ["| " + " | ".join(r) + " |" for r in state_rows(default, decide)]
    text = "\n".join(lines) + "\n\n" + summary_line(default, "Default scale") + ".\n"
    if decide:
        text += "\n" + summary_line(decide, "Decide tier") + ".\n"
    return text


def markers(block: str = "claims-summary") -> tuple[str, str]:
    """The lines that open and close the generated block ``block`` in a Markdown file."""
    return (f"<!-- {block}:begin (generated by python -m gpbayes_repro.verdict_table --update) -->",
            f"<!-- {block}:end -->")


BEGIN, END = markers()


def replace_block(path, begin: str, end: str, text: str, *, check: bool = False) -> bool:
    """Replace what stands between the lines ``begin`` and ``end`` of ``path`` by ``text``; True when it changed.

    ``check=True`` writes nothing (a drift test).  A file without the markers, or with them more than once,
    is refused.  Shared by the claims summaries here and the run facts (``gpbayes_repro.run_facts``).
    """
    path = Path(path)
    old = path.read_text()
    if old.count(begin) != 1 or old.count(end) != 1:
        raise ValueError(f"{path}: expected one generated block {begin!r} ... {end!r}, found "
                         f"{old.count(begin)} begin and {old.count(end)} end lines")
    head, rest = old.split(begin, 1)
    _, tail = rest.split(end, 1)
    new = head + begin + "\n" + text.rstrip("\n") + "\n" + end + tail
    if new != old and not check:
        from gpbayes_repro.io import atomic_path

        with atomic_path(path) as tmp:
            tmp.write_text(new)
    return new != old


def update_file(path, text: str, *, check: bool = False, block: str = "claims-summary") -> bool:
    """Replace what stands between the markers of ``block`` in ``path`` by ``text``; True when it changed.

    ``check=True`` writes nothing (a test's drift check).  A file without the markers is refused.
    """
    return replace_block(path, *markers(block), text, check=check)


#: each paper's reproduction page (docs/reproduction/), where its reader's summary is generated
PAGES = {"foundation": "foundation.md", "pm_gpc": "filippone_girolami_2014.md", "slice_ma": "murray_adams_2010.md",
         "amis": "xiong_amis.md", "sparse_mcmc": "hensman_2015.md", "gplvm": "gadd_gplvm.md"}


def paper_block(key: str, default: dict, decide: dict | None = None) -> str:
    """A reader's summary of one paper (ReScience [Re]/[¬Re] and AEA data-editor style): the claims in scope with
    their final states and reason codes, the checks, the sentences out of scope with their reasons."""
    from gpbayes_repro import registry
    from gpbayes_repro.final_states import REASON_CODES

    doc = default.get(key)
    if doc is None:
        return "No committed default-scale claims file for this paper."
    dec = {c["id"]: c for c in (decide or {}).get(key, {}).get("claims", [])}
    lines = ["| claim | the paper's words | default scale | decide tier |", "|---|---|---|---|"]
    reg_of = {c["id"]: c for c in registry.load(key).get("claims", [])}
    for kind in ("claim", "check"):
        for c in doc["claims"]:
            ent = reg_of.get(c["id"], {})
            if ent.get("kind", c.get("kind", "claim")) != kind:
                continue
            q = " ".join(str(ent.get("quote") or "").split())
            q = _plain(html.escape(q[:140] + ("..." if len(q) > 140 else ""))) if q else "(a check, not a claim)"
            lines.append(f"| `{c['id']}` | {q} | {_state_cell(c)} | "
                         f"{_state_cell(dec.get(c['id'])) if key in (decide or {}) else 'not run'} |")
    reg = registry.load(key)

    def states_of(claims):
        return [(c.get("final_state") or {}).get("state", c.get("verdict")) for c in claims
                if reg_of.get(c["id"], {}).get("kind", c.get("kind", "claim")) == "claim"]

    def counted(st):
        return "(" + ", ".join(f"{st.count(x)} {x}" for x in dict.fromkeys(st)) + ")" if st else ""

    states = states_of(doc["claims"])
    dec_states = states_of(dec.values()) if dec else []
    codes = sorted({s for s in states + dec_states if s in REASON_CODES})
    text = "\n".join(lines) + "\n\n"
    text += (f"In scope: {len(states)} claims of the paper"
             + (f" -- default scale {counted(states)}; decide tier {counted(dec_states)}" if dec_states else
                f" {counted(states)}" if states else "")
             + f"; {len(doc['claims']) - len(states)} checks. ")
    if codes:
        text += "Reason codes: " + "; ".join(f"**{s}** — {REASON_CODES[s]}" for s in codes) + ". "
    ne = reg.get("not_encoded") or []
    text += f"Out of scope: {len(ne)} further sentences of the paper, not encoded"
    if ne:
        text += " —\n\n" + "\n".join(
            f"- {r['where']}: \u201c{_plain(html.escape(normalise_short(r['quote'])))}\u201d — "
            f"{_plain(html.escape(normalise_short(r['reason'], 200)))}" for r in ne)
    return text + "\n"


def normalise_short(text: str, n: int = 120) -> str:
    """``text`` with its whitespace collapsed, cut to ``n`` characters with an ellipsis."""
    t = " ".join(str(text).split())
    return t if len(t) <= n else t[: n - 3] + "..."


def coverage_markdown(path) -> str:
    """The coverage table of ``benchmarks/results/coverage.csv`` (``gpbayes_repro.coverage --out``) in Markdown,
    with a line that counts its rows and gives the lowest coverage of the required ones."""
    import csv

    with open(path, newline="") as fh:
        rows_ = list(csv.DictReader(fh))
    lines = ["| method | count | inputs | used by | nominal | coverage (MC s.e.) | simulations |",
             "|---|---|---|---|---:|---:|---:|"]
    for r in rows_:
        lines.append(f"| {r['method']} | {r['count']} | {r['inputs']} | {r['used_by']} | {float(r['nominal']):.3g} | "
                     f"{100 * float(r['coverage']):.1f} % ({100 * float(r['mc_se']):.1f}) | {int(float(r['n_sim']))} |")
    req = [r for r in rows_ if str(r["required"]) == "True"]
    low = min(req, key=lambda r: float(r["coverage"]) / float(r["nominal"])) if req else None
    tail = (f"{len(rows_)} rows, {len(req)} required (a verdict rests on them); the lowest required row relative to "
            f"its nominal: {100 * float(low['coverage']):.1f} % of nominal {float(low['nominal']):.3g} ({low['method']}, "
            f"{low['count']}, {low['inputs']})." if low else f"{len(rows_)} rows, none required.")
    return "\n".join(lines) + "\n\n" + tail + "\n"


def decide_readers_table(decide: dict[str, dict]) -> str:
    """The reader's table that opens the decide tier's README: per claim (checks apart, after the claims) its
    paper, id, final state, the numbers that decide it and when and at which commit its claims file was
    computed -- the provenance history stays below the table."""
    lines = ["| paper | claim | final state | deciding numbers | computed |", "|---|---|---|---|---|"]
    for kind in ("claim", "check"):
        for key in [k for k in PAPERS if k in decide] + sorted(set(decide) - set(PAPERS)):
            prov = decide[key].get("provenance", {})
            when = f"{str(prov.get('created', '?'))[:10]}, {str(prov.get('git_commit', '?'))[:7]}"
            for claim in decide[key]["claims"]:
                if claim.get("kind", "claim") != kind:
                    continue
                fs = claim.get("final_state") or {}
                lines.append(f"| {key} | `{claim['id']}`{' (check)' if kind == 'check' else ''} | "
                             f"**{fs.get('state', 'none')}** | {_plain(deciding_numbers(claim))} | {when} |")
    return "\n".join(lines) + "\n"


def generated_blocks(root=".") -> dict[tuple[str, str], str]:
    """``{(file, block): text}`` of every generated block: README's count lines, docs/verdicts.md's full table
    and its coverage table, each paper page's reader's summary.

    Read from the committed claims files under ``root``: ``benchmarks/results/default_scale`` and, when
    present, ``benchmarks/results/decide_scale``; the coverage table from ``benchmarks/results/coverage.csv``.
    """
    root = Path(root)
    default = load_scale(root / "benchmarks/results/default_scale", "default")
    decide_dir = root / "benchmarks/results/decide_scale"
    decide = load_scale(decide_dir, "decide") if decide_dir.is_dir() else {}
    readme = summary_line(default, "At default scale") + "." + (
        " " + summary_line(decide, "With the committed decide tier (" + (
            "all six claims files" if set(decide) >= set(PAGES) else "so far " + ", ".join(sorted(decide))) + "; see "
                           "benchmarks/results/decide_scale/README.md: the claims page shows whether it is "
                           "still current)") + "." if decide else "")
    out = {(str(root / "README.md"), "claims-summary"): readme,
           (str(root / "docs/verdicts.md"), "claims-summary"): states_markdown(default, decide),
           (str(root / "docs/verdicts.md"), "coverage-table"): coverage_markdown(
               root / "benchmarks/results/coverage.csv")}
    for key, page in PAGES.items():
        out[(str(root / "docs/reproduction" / page), "claims-summary")] = paper_block(key, default, decide)
    if decide:
        out[(str(decide_dir / "README.md"), "readers-table")] = decide_readers_table(decide)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gpbayes_repro.verdict_table", description=__doc__.splitlines()[0])
    ap.add_argument("default", nargs="?", default="results/claims",
                    help="claims directory of a default-scale run (results/claims)")
    ap.add_argument("--paper", default="benchmarks/results/paper_scale",
                    help="claims files of the targets run at scale=paper")
    ap.add_argument("--before", help="claims directory of an earlier default-scale run, shown beside")
    ap.add_argument("--out", help="write the Markdown table here (else print it)")
    ap.add_argument("--update", action="store_true",
                    help="regenerate the claims summaries of README.md and docs/verdicts.md from the committed "
                         "claims files (benchmarks/results/default_scale, decide_scale) and exit")
    args = ap.parse_args(argv)
    if args.update:
        for (path, block), text in generated_blocks().items():
            print(f"{path} [{block}]: {'updated' if update_file(path, text, block=block) else 'unchanged'}")
        return 0
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
