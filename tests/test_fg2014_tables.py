"""Checks on the transcriptions of Filippone & Girolami (2014) Tables I-III.

The CSVs in ``workflow/resources/`` were written by
``tools/transcribe_fg2014_tables.py``; the spot values below were read by eye
from the source text (see ``workflow/resources/README.md``).
"""

from __future__ import annotations

import csv
import itertools
from pathlib import Path

import pytest

RES = Path(__file__).resolve().parents[1] / "workflow" / "resources"

NS, DS, KERNELS = ("50", "200"), ("2", "10"), ("isotropic", "ard")
T1_SCHEMES = ("pm-la-1", "pm-la-16", "pm-la-64", "pm-ep-1", "pm-ep-16", "pm-ep-64",
              "aa", "surr")
T2_SCHEMES = ("pm-la", "pm-ep", "aa", "surr")
T3_SCHEMES = ("pm", "aa", "surr")
RHAT = ("rhat_1000", "rhat_2000", "rhat_5000", "rhat_10000")


def load(name: str) -> list[dict[str, str]]:
    with open(RES / name, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def t1():
    return load("fg2014_table1.csv")


@pytest.fixture(scope="module")
def t2():
    return load("fg2014_table2.csv")


@pytest.fixture(scope="module")
def t3():
    return load("fg2014_table3.csv")


def index(rows, *keys):
    out = {tuple(r[k] for k in keys): r for r in rows}
    assert len(out) == len(rows), "duplicate keys"
    return out


def test_columns(t1, t2, t3):
    assert list(t1[0]) == ["n", "d", "kernel", "scheme", "ess", "ess_sd", *RHAT,
                           "acceptance", "acceptance_sd"]
    assert list(t2[0]) == ["n", "d", "scheme", "kernel", "ops_per_iteration", "ops_sd"]
    assert list(t3[0]) == ["n", "d", "kernel", "scheme", "ess", "ess_sd", "ess_per_op",
                           "ess_per_op_sd", *RHAT]


@pytest.mark.parametrize("name, schemes, n_rows", [
    ("fg2014_table1.csv", T1_SCHEMES, 64),
    ("fg2014_table2.csv", T2_SCHEMES, 32),
    ("fg2014_table3.csv", T3_SCHEMES, 24),
])
def test_row_counts_and_full_grid(name, schemes, n_rows):
    rows = load(name)
    assert len(rows) == n_rows
    keys = set(index(rows, "n", "d", "kernel", "scheme"))
    assert keys == set(itertools.product(NS, DS, KERNELS, schemes))


def test_all_numeric_nonnegative(t1, t2, t3):
    for rows, cat in ((t1, {"kernel", "scheme"}), (t2, {"kernel", "scheme"}),
                      (t3, {"kernel", "scheme"})):
        for r in rows:
            for k, v in r.items():
                if k not in cat:
                    assert float(v) >= 0, (k, r)


def test_rhat_at_least_one(t1, t3):
    for r in t1 + t3:
        for k in RHAT:
            assert float(r[k]) >= 1.0, r
            assert float(r[k]) < 1.5, r  # largest printed value is 1.39


def test_acceptance_is_percent(t1):
    acc = [float(r["acceptance"]) for r in t1]
    assert 1 < min(acc) and max(acc) < 50


# --- spot checks, read by eye from the source text -------------------------

@pytest.mark.parametrize("n, d, kernel, scheme, expected", [
    # line 253: 50 2 PM LA (1) 749 (73) 1.00 1.00 1.00 1.00 23.9 (0.4) | 131 (41) ...
    ("50", "2", "isotropic", "pm-la-1",
     ("749", "73", "1.00", "1.00", "1.00", "1.00", "23.9", "0.4")),
    ("50", "2", "ard", "pm-la-1",
     ("131", "41", "1.04", "1.05", "1.04", "1.02", "13.0", "3.3")),
    # line 259: AA | 20 (9) 1.12 1.12 1.05 1.03 20.3 (2.6)
    ("50", "2", "ard", "aa",
     ("20", "9", "1.12", "1.12", "1.05", "1.03", "20.3", "2.6")),
    # line 261: 50 10 PM LA (1) ... | 19 (12) 1.08 1.09 1.13 1.17 7.1 (4.4)
    ("50", "10", "ard", "pm-la-1",
     ("19", "12", "1.08", "1.09", "1.13", "1.17", "7.1", "4.4")),
    # line 266: PM EP (64) 583 (51) ... 26.1 (0.6)
    ("50", "10", "isotropic", "pm-ep-64",
     ("583", "51", "1.00", "1.00", "1.00", "1.00", "26.1", "0.6")),
    # line 277: 200 10 PM LA (1) 115 (53) 1.03 1.03 1.02 1.04 27.1 (11.3) | 27 (10) 1.39 ...
    ("200", "10", "isotropic", "pm-la-1",
     ("115", "53", "1.03", "1.03", "1.02", "1.04", "27.1", "11.3")),
    ("200", "10", "ard", "pm-la-1",
     ("27", "10", "1.39", "1.33", "1.19", "1.11", "12.3", "2.9")),
    # line 284: SURR 18 (7) 1.27 1.28 1.24 1.16 21.5 (8.6) | 10 (3) 1.07 1.08 1.06 1.05 20.3 (3.9)
    ("200", "10", "isotropic", "surr",
     ("18", "7", "1.27", "1.28", "1.24", "1.16", "21.5", "8.6")),
    ("200", "10", "ard", "surr",
     ("10", "3", "1.07", "1.08", "1.06", "1.05", "20.3", "3.9")),
])
def test_table1_spot(t1, n, d, kernel, scheme, expected):
    r = index(t1, "n", "d", "kernel", "scheme")[(n, d, kernel, scheme)]
    got = tuple(r[k] for k in ("ess", "ess_sd", *RHAT, "acceptance", "acceptance_sd"))
    assert got == expected


@pytest.mark.parametrize("n, d, scheme, kernel, ops, sd", [
    ("50", "2", "pm-la", "isotropic", "8.2", "0.2"),
    ("50", "2", "pm-ep", "ard", "17.7", "0.1"),
    ("50", "10", "pm-ep", "isotropic", "13.0", "0.1"),
    ("200", "2", "pm-ep", "isotropic", "15.5", "0.0"),
    ("200", "10", "pm-ep", "ard", "13.2", "0.2"),
    ("200", "10", "pm-la", "ard", "7.9", "0.2"),
    ("200", "10", "surr", "ard", "3.0", "0.0"),
])
def test_table2_spot(t2, n, d, scheme, kernel, ops, sd):
    r = index(t2, "n", "d", "kernel", "scheme")[(n, d, kernel, scheme)]
    assert (r["ops_per_iteration"], r["ops_sd"]) == (ops, sd)


def test_table2_aa_surr_constant(t2):
    for r in t2:
        if r["scheme"] in ("aa", "surr"):
            assert r["ops_per_iteration"] == {"aa": "1.0", "surr": "3.0"}[r["scheme"]]
            assert r["ops_sd"] == "0.0"


@pytest.mark.parametrize("n, d, kernel, scheme, expected", [
    # line 325: 50 2 PM 9057 (243) 556 (15) 1.00 x4 | 4301 (169) 243 (10) 1.00 x4
    ("50", "2", "isotropic", "pm", ("9057", "243", "556", "15", "1.00", "1.00", "1.00", "1.00")),
    ("50", "2", "ard", "pm", ("4301", "169", "243", "10", "1.00", "1.00", "1.00", "1.00")),
    # line 326: AA 1571 (378) 1571 (378) ... | 57 (11) 57 (11) 1.01 x4
    ("50", "2", "ard", "aa", ("57", "11", "57", "11", "1.01", "1.01", "1.01", "1.01")),
    # line 334 (irregular cell 55(40)554055(40)): 737 (533) 55 (40) 1.01 x4 | 363 (250) 28 (19) ...
    ("200", "10", "isotropic", "pm", ("737", "533", "55", "40", "1.01", "1.01", "1.01", "1.01")),
    ("200", "10", "ard", "pm", ("363", "250", "28", "19", "1.03", "1.03", "1.01", "1.01")),
    # line 336: SURR 25 (6) 8 (2) 1.05 1.05 1.01 1.00 | 22 (5) 7 (2) 1.09 1.07 1.05 1.03
    ("200", "10", "isotropic", "surr", ("25", "6", "8", "2", "1.05", "1.05", "1.01", "1.00")),
    ("200", "10", "ard", "surr", ("22", "5", "7", "2", "1.09", "1.07", "1.05", "1.03")),
])
def test_table3_spot(t3, n, d, kernel, scheme, expected):
    r = index(t3, "n", "d", "kernel", "scheme")[(n, d, kernel, scheme)]
    got = tuple(r[k] for k in ("ess", "ess_sd", "ess_per_op", "ess_per_op_sd", *RHAT))
    assert got == expected


def test_table3_ess_per_op_consistent_with_table2(t2, t3):
    """ESS / (Table II cost) reproduces the printed ESS/O(n^3) to rounding."""
    cost = index(t2, "n", "d", "kernel", "scheme")
    t2_scheme = {"pm": "pm-ep", "aa": "aa", "surr": "surr"}
    for r in t3:
        ops = float(cost[(r["n"], r["d"], r["kernel"], t2_scheme[r["scheme"]])]
                    ["ops_per_iteration"])
        assert abs(float(r["ess"]) / ops - float(r["ess_per_op"])) <= 0.6, r
        assert abs(float(r["ess_sd"]) / ops - float(r["ess_per_op_sd"])) <= 0.6, r
