"""Compare the arrays of two workflow runs bit for bit.

    python tools/compare_results.py BEFORE_DIR AFTER_DIR [--ignore NAME ...]

Each directory is a workflow working directory (or its ``results/`` folder).
Every NetCDF file under ``results/`` and ``data/processed/`` is opened in each
of its groups and every variable (and coordinate) is compared with
``numpy.array_equal`` (NaN equal to NaN, dtype and shape included); a
variable only in the second run is listed as added (new output is not a
changed number), one only in the first is a difference unless ``--rename
OLD=NEW`` names its new name; every CSV
file is compared cell by cell.  Values that measure the clock, not the
numerics, are left out by name: anything whose name contains ``wall_time``,
``seconds``, ``per_second``, ``cpu_time``, ``wall``, ``timing_`` (the AMIS
reference runs' repeated timings: ``timing_share``, ``timing_target_cpu``),
``target_cpu``, ``bookkeeping`` (its share of CPU time), or is given with ``--ignore``.  Attributes (provenance, creation time,
git commit) are not compared.

Exit status 0 when every compared array is identical, 1 otherwise; the report
lists files only in one run, files whose arrays differ (with the variables and
the largest absolute difference) and a count of the arrays compared.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import numpy as np

CLOCK_WORDS = ("wall_time", "wall", "seconds", "per_second", "per_s", "cpu_time", "cpu_s", "elapsed", "time_s",
               "bookkeeping", "created", "timing_", "target_cpu")
GROUPED = ("results", "data/processed")


def _clock(name: str, extra: tuple[str, ...]) -> bool:
    low = name.lower()
    return any(w in low for w in CLOCK_WORDS + extra)


def _files(root: Path) -> dict[str, Path]:
    out = {}
    for sub in GROUPED:
        base = root / sub
        if not base.exists():
            continue
        for p in sorted(base.rglob("*")):
            if p.is_file() and p.suffix in (".nc", ".csv") and not p.name.startswith("."):
                out[str(p.relative_to(root))] = p
    return out


def _groups(path: Path) -> list[str | None]:
    import netCDF4

    with netCDF4.Dataset(path) as nc:
        names = list(nc.groups)
    return [None] + names


def _equal(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind in "fc":
        return bool(np.array_equal(a, b, equal_nan=True))
    return bool(np.array_equal(a, b))


def _maxdiff(a: np.ndarray, b: np.ndarray) -> str:
    try:
        if a.shape == b.shape and a.dtype.kind in "fiuc" and b.dtype.kind in "fiuc":
            with np.errstate(invalid="ignore"):
                d = np.abs(a.astype(float) - b.astype(float))
            return f"max |diff| {np.nanmax(d) if d.size else 0:.3g}"
    except (TypeError, ValueError):
        pass
    return f"shape/dtype {a.shape}/{a.dtype} vs {b.shape}/{b.dtype}"


def compare_netcdf(a: Path, b: Path, extra: tuple[str, ...], renames: dict | None = None,
                   added: list | None = None) -> tuple[int, list[str]]:
    import xarray as xr

    renames = renames or {}
    added = added if added is not None else []
    n, diffs = 0, []
    ga, gb = _groups(a), _groups(b)
    for g in sorted(set(ga) | set(gb), key=lambda s: s or ""):
        if g not in ga or g not in gb:
            diffs.append(f"group {g!r} only in {'before' if g in ga else 'after'}")
            continue
        with xr.open_dataset(a, group=g, decode_times=False) as da, xr.open_dataset(b, group=g, decode_times=False) as db:
            names_a = set(da.variables)
            names_b = set(db.variables)
            for name in sorted(names_a | names_b):
                if _clock(str(name), extra):
                    continue
                where = f"{g or '/'}:{name}"
                if name in names_b and name not in names_a:
                    added.append(where)  # a new variable is not a changed number
                    continue
                if name not in names_b:
                    new = renames.get(str(name))
                    if new is None or new not in names_b:
                        diffs.append(f"{where} only in before")
                        continue
                    x, y = np.asarray(da[name].values), np.asarray(db[new].values)
                    n += 1
                    if not _equal(x, y):
                        diffs.append(f"{where} -> {new}: {_maxdiff(x, y)}")
                    continue
                x, y = np.asarray(da[name].values), np.asarray(db[name].values)
                n += 1
                if not _equal(x, y):
                    diffs.append(f"{where}: {_maxdiff(x, y)}")
    return n, diffs


def compare_csv(a: Path, b: Path, extra: tuple[str, ...]) -> tuple[int, list[str]]:
    with open(a, newline="") as fa, open(b, newline="") as fb:
        ra, rb = list(csv.reader(fa)), list(csv.reader(fb))
    if not ra or not rb:
        return 1, ([] if ra == rb else ["one file is empty"])
    ha, hb = ra[0], rb[0]
    if ha != hb:
        return 1, [f"header differs: {ha} vs {hb}"]
    keep = [i for i, h in enumerate(ha) if not _clock(h, extra)]
    if len(ra) != len(rb):
        return 1, [f"{len(ra)} vs {len(rb)} rows"]
    diffs = []
    for r, (x, y) in enumerate(zip(ra[1:], rb[1:]), start=2):
        bad = [ha[i] for i in keep if i < len(x) and i < len(y) and x[i] != y[i] and not _clock(" ".join(x[:1]), extra)]
        if bad:
            diffs.append(f"row {r} ({x[0] if x else ''}): columns {bad}")
    return len(keep) * (len(ra) - 1), diffs[:10] + ([f"... {len(diffs) - 10} more rows"] if len(diffs) > 10 else [])


def compare(before: Path, after: Path, extra: tuple[str, ...] = (), renames: dict | None = None) -> int:
    fa, fb = _files(before), _files(after)
    only_a = sorted(set(fa) - set(fb))
    only_b = sorted(set(fb) - set(fa))
    n_arrays, n_bad, added = 0, 0, []
    for rel in sorted(set(fa) & set(fb)):
        if rel.endswith(".nc"):
            new_vars: list = []
            n, diffs = compare_netcdf(fa[rel], fb[rel], extra, renames, new_vars)
            added.extend(f"{rel}:{v}" for v in new_vars)
        else:
            n, diffs = compare_csv(fa[rel], fb[rel], extra)
        n_arrays += n
        if diffs:
            n_bad += 1
            print(f"DIFFERS {rel}")
            for d in diffs:
                print(f"    {d}")
    for rel in only_a:
        print(f"ONLY BEFORE {rel}")
    for rel in only_b:
        print(f"ONLY AFTER {rel}")
    if added:
        print(f"ADDED {len(added)} variables (not in before; not a changed number), e.g. {added[:5]}")
    same = len(set(fa) & set(fb)) - n_bad
    print(f"{len(set(fa) & set(fb))} files in both ({same} identical, {n_bad} differ), "
          f"{len(only_a)} only before, {len(only_b)} only after; {n_arrays} arrays/columns compared "
          "(clock-dependent values left out)")
    return 0 if not (n_bad or only_a or only_b) else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--ignore", action="append", default=[], help="leave out variables/columns containing this")
    ap.add_argument("--rename", action="append", default=[], metavar="OLD=NEW",
                    help="a variable renamed on purpose: compare OLD (before) with NEW (after)")
    a = ap.parse_args(argv)
    roots = []
    for d in (a.before, a.after):
        roots.append(d.parent if d.name == "results" else d)
    renames = dict(r.split("=", 1) for r in a.rename)
    return compare(roots[0], roots[1], tuple(s.lower() for s in a.ignore), renames)


if __name__ == "__main__":
    sys.exit(main())
