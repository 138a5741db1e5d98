#!/usr/bin/env python
"""Transcribe Tables I, II and III of Filippone & Girolami (2014) to CSV.

Run once (for the record); the CSVs it wrote are committed under
``workflow/resources/``. It documents, executably, how they were made::

    python tools/transcribe_fg2014_tables.py            # write the three CSVs
    python tools/transcribe_fg2014_tables.py --check    # compare, write nothing

Source: ``/work/shared/seeds/filippone_girolami_2014_pseudo_marginal_gp.txt``,
a LaTeX-to-text conversion of M. Filippone & M. Girolami, "Pseudo-marginal
Bayesian inference for Gaussian processes", IEEE TPAMI 36(11), 2014.

In that conversion every number printed in a table cell appears several times,
concatenated (rendered text + MathML token text + LaTeX alt-text).  The cell
encodings met in the three tables, and how each is decoded:

* value cells: the printed number three times, ``749749749`` -> ``749``,
  ``1.001.001.00`` -> ``1.00``, ``23.923.923.9`` -> ``23.9``
  (the token must equal ``x * 3`` with ``x`` a decimal number);
* standard-deviation cells: ``(x)x(x)``, e.g. ``(73)73(73)`` -> ``73``;
* the number of importance samples in a Table I scheme label, e.g.
  ``PM LA (1)1(1)``: same ``(x)x(x)`` form, ``x`` in {1, 16, 64};
* one irregular cell where value and sd were typeset as a single math group
  (Table III, n=200, d=10, PM, isotropic, ESS/O(n^3)):
  ``55(40)554055(40)`` = ``v(s)`` + ``v s`` + ``v(s)`` -> value ``55``, sd ``40``.

Any token that does not match one of these forms, or a row whose sequence of
decoded cells does not match the expected column layout, aborts the script.
Numbers are written exactly as printed (strings, so ``1.00`` and ``0.0`` keep
their published precision).  Table I acceptance rates are percentages as
printed (``23.9`` means 23.9 %).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = Path("/work/shared/seeds/filippone_girolami_2014_pseudo_marginal_gp.txt")
OUT_DIR = REPO / "workflow" / "resources"

NUM = r"\d+(?:\.\d+)?"
RE_NUM = re.compile(rf"^{NUM}$")
RE_SD = re.compile(rf"^\(({NUM})\)\1\(\1\)$")
RE_VALUE_SD_FUSED = re.compile(rf"^({NUM})\(({NUM})\)\1\2\1\(\2\)$")

KERNELS = ("isotropic", "ard")
NS = ("50", "200")
DS = ("2", "10")


def decode_triple(tok: str) -> str | None:
    """``'749749749'`` -> ``'749'``; None if ``tok`` is not a tripled number."""
    if len(tok) % 3:
        return None
    x = tok[: len(tok) // 3]
    return x if tok == x * 3 and RE_NUM.match(x) else None


def decode_cells(tokens: list[str], where: str) -> list[tuple[str, str]]:
    """Decode value / sd tokens into ``[(kind, text), ...]``, kind in {'v', 's'}."""
    cells: list[tuple[str, str]] = []
    for tok in tokens:
        if (x := decode_triple(tok)) is not None:
            cells.append(("v", x))
        elif m := RE_SD.match(tok):
            cells.append(("s", m.group(1)))
        elif m := RE_VALUE_SD_FUSED.match(tok):
            print(f"note: {where}: irregular cell {tok!r} -> {m.group(1)} ({m.group(2)})",
                  file=sys.stderr)
            cells.append(("v", m.group(1)))
            cells.append(("s", m.group(2)))
        else:
            raise ValueError(f"{where}: undecodable token {tok!r}")
    return cells


def expect_layout(cells: list[tuple[str, str]], layout: str, where: str) -> list[str]:
    kinds = "".join(k for k, _ in cells)
    if kinds != layout:
        raise ValueError(f"{where}: cell kinds {kinds!r}, expected {layout!r}: {cells}")
    return [t for _, t in cells]


def find_table(lines: list[str], caption: str, n_header: int, n_rows: int) -> tuple[int, list[str]]:
    """Return (1-based line number of first data row, data rows) for a table."""
    hits = [i for i, ln in enumerate(lines) if ln.startswith(caption)]
    if len(hits) != 1:
        raise ValueError(f"caption {caption!r} found {len(hits)} times")
    start = hits[0] + 1 + n_header
    rows = lines[start : start + n_rows]
    if not rows[0].split()[:2] in ([n, d] for n in NS for d in DS):
        raise ValueError(f"{caption}: first data row does not start with n d: {rows[0][:40]!r}")
    if lines[start + n_rows].strip():
        raise ValueError(f"{caption}: expected a blank line after {n_rows} data rows")
    return start + 1, rows


def split_row_prefix(toks: list[str], state: dict, where: str) -> list[str]:
    """Strip a leading ``n d`` (first row of each block) and track the block."""
    if toks[0] in NS and toks[1] in DS:
        state["n"], state["d"] = toks[0], toks[1]
        return toks[2:]
    return toks


def parse_table1(lines: list[str]) -> tuple[int, list[dict]]:
    first, rows = find_table(lines, "TABLE I:", n_header=3, n_rows=32)
    out, state = [], {}
    for k, row in enumerate(rows):
        where = f"Table I line {first + k}"
        toks = split_row_prefix(row.split(), state, where)
        if toks[0] == "PM":
            approx = toks[1]
            if approx not in ("LA", "EP"):
                raise ValueError(f"{where}: bad approximation {approx!r}")
            m = RE_SD.match(toks[2])
            if not m or m.group(1) not in ("1", "16", "64"):
                raise ValueError(f"{where}: bad N_imp token {toks[2]!r}")
            scheme = f"pm-{approx.lower()}-{m.group(1)}"
            toks = toks[3:]
        elif toks[0] in ("AA", "SURR"):
            scheme = toks[0].lower()
            toks = toks[1:]
        else:
            raise ValueError(f"{where}: bad scheme {toks[0]!r}")
        vals = expect_layout(decode_cells(toks, where), "vsvvvvvs" * 2, where)
        for j, kernel in enumerate(KERNELS):
            v = vals[8 * j : 8 * (j + 1)]
            out.append(dict(n=state["n"], d=state["d"], kernel=kernel, scheme=scheme,
                            ess=v[0], ess_sd=v[1], rhat_1000=v[2], rhat_2000=v[3],
                            rhat_5000=v[4], rhat_10000=v[5], acceptance=v[6],
                            acceptance_sd=v[7]))
    return first, out


def parse_table2(lines: list[str]) -> tuple[int, list[dict]]:
    first, rows = find_table(lines, "TABLE II:", n_header=1, n_rows=16)
    out, state = [], {}
    for k, row in enumerate(rows):
        where = f"Table II line {first + k}"
        toks = split_row_prefix(row.split(), state, where)
        if toks[0] == "PM" and toks[1] in ("LA", "EP"):
            scheme, toks = f"pm-{toks[1].lower()}", toks[2:]
        elif toks[0] in ("AA", "SURR"):
            scheme, toks = toks[0].lower(), toks[1:]
        else:
            raise ValueError(f"{where}: bad scheme {toks[:2]!r}")
        vals = expect_layout(decode_cells(toks, where), "vs" * 2, where)
        for j, kernel in enumerate(KERNELS):
            out.append(dict(n=state["n"], d=state["d"], scheme=scheme, kernel=kernel,
                            ops_per_iteration=vals[2 * j], ops_sd=vals[2 * j + 1]))
    return first, out


def parse_table3(lines: list[str]) -> tuple[int, list[dict]]:
    first, rows = find_table(lines, "TABLE III:", n_header=3, n_rows=12)
    out, state = [], {}
    for k, row in enumerate(rows):
        where = f"Table III line {first + k}"
        toks = split_row_prefix(row.split(), state, where)
        if toks[0] not in ("PM", "AA", "SURR"):
            raise ValueError(f"{where}: bad scheme {toks[0]!r}")
        scheme, toks = toks[0].lower(), toks[1:]
        vals = expect_layout(decode_cells(toks, where), "vsvsvvvv" * 2, where)
        for j, kernel in enumerate(KERNELS):
            v = vals[8 * j : 8 * (j + 1)]
            out.append(dict(n=state["n"], d=state["d"], kernel=kernel, scheme=scheme,
                            ess=v[0], ess_sd=v[1], ess_per_op=v[2], ess_per_op_sd=v[3],
                            rhat_1000=v[4], rhat_2000=v[5], rhat_5000=v[6],
                            rhat_10000=v[7]))
    return first, out


def order(rows: list[dict], schemes: tuple[str, ...]) -> list[dict]:
    """Sort by n, d, kernel (isotropic first), then the scheme order of the paper."""
    return sorted(rows, key=lambda r: (int(r["n"]), int(r["d"]),
                                       KERNELS.index(r["kernel"]),
                                       schemes.index(r["scheme"])))


def to_csv(rows: list[dict]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    ap.add_argument("--out-dir", type=Path, default=OUT_DIR)
    ap.add_argument("--check", action="store_true",
                    help="compare with the existing CSVs instead of writing them")
    args = ap.parse_args(argv)

    raw = args.source.read_bytes()
    print(f"source {args.source} sha256 {hashlib.sha256(raw).hexdigest()}", file=sys.stderr)
    lines = raw.decode("utf-8").splitlines()

    f1, t1 = parse_table1(lines)
    f2, t2 = parse_table2(lines)
    f3, t3 = parse_table3(lines)
    t1 = order(t1, ("pm-la-1", "pm-la-16", "pm-la-64", "pm-ep-1", "pm-ep-16", "pm-ep-64",
                    "aa", "surr"))
    t2 = order(t2, ("pm-la", "pm-ep", "aa", "surr"))
    t3 = order(t3, ("pm", "aa", "surr"))
    assert (len(t1), len(t2), len(t3)) == (64, 32, 24), (len(t1), len(t2), len(t3))
    print(f"data rows: Table I lines {f1}-{f1 + 31}, Table II lines {f2}-{f2 + 15}, "
          f"Table III lines {f3}-{f3 + 11}", file=sys.stderr)

    status = 0
    for name, rows in (("fg2014_table1.csv", t1), ("fg2014_table2.csv", t2),
                       ("fg2014_table3.csv", t3)):
        path = args.out_dir / name
        text = to_csv(rows)
        if args.check:
            same = path.exists() and path.read_text() == text
            print(f"{path}: {'OK' if same else 'DIFFERS'}", file=sys.stderr)
            status |= not same
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print(f"wrote {path} ({len(rows)} rows)", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
