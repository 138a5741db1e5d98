"""Tests for gpbayes_repro.data: vendored files, manifest, preparation (fast, offline)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import yaml

from gpbayes_repro import data as D
from gpbayes_repro.data import DataError

REPO = Path(__file__).resolve().parents[1]
RAW = REPO / "data" / "raw"
MANIFEST = RAW / "MANIFEST.yaml"

EXPECTED = {
    # name: (n, d, task, stand_in)
    "breast": (683, 9, "classification", 0),
    "pima": (768, 8, "classification", 0),
    "abalone": (2833, 7, "classification", 1),
    "ionosphere": (351, 33, "classification", 0),
    "glass": (214, 9, "classification", 0),
    "thyroid": (215, 5, "classification", 1),
    "usps_stand_in": (1130, 55, "classification", 1),
    "image_stand_in": (2310, 18, "classification", 1),
    "housing": (506, 13, "regression", 0),
    "concrete": (1030, 8, "regression", 0),
    "parkinsons_stand_in": (161, 13, "regression", 1),
    "coal": (191, 1, "events", 0),
    "mnist_subset": (5000, 784, "multiclass", 1),
}


@pytest.fixture(scope="module")
def manifest():
    return D.load_manifest(MANIFEST)


@pytest.fixture(scope="module")
def vendored_dir(manifest, tmp_path_factory):
    """A copy of the vendored files only, so that a paper's original that a
    user has dropped into data/raw/ does not change what these tests see."""
    d = tmp_path_factory.mktemp("raw")
    shutil.copy(MANIFEST, d / "MANIFEST.yaml")
    for entry in manifest.values():
        shutil.copy(RAW / entry["file"], d / entry["file"])
    return d


@pytest.fixture(scope="module")
def prepared(manifest, vendored_dir):
    return {name: D.prepare_dataset(name, vendored_dir, manifest) for name in EXPECTED}


def _copy_raw(tmp_path: Path, *files: str) -> Path:
    """Copy the manifest and the named raw files into tmp_path."""
    shutil.copy(MANIFEST, tmp_path / "MANIFEST.yaml")
    for f in files:
        shutil.copy(RAW / f, tmp_path / f)
    return tmp_path


# ---------------------------------------------------------------- manifest


def test_manifest_lists_exactly_the_expected_data_sets(manifest):
    assert set(manifest) == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_manifest_checksum_matches_file(manifest, name):
    entry = manifest[name]
    assert D.sha256_file(RAW / entry["file"]) == entry["sha256"]
    assert D.verify_file(RAW / entry["file"], entry["sha256"]) == entry["sha256"]


def test_every_raw_file_is_in_the_manifest(manifest):
    vendored = {e["file"] for e in manifest.values()}
    originals = {e["original_file"] for e in manifest.values() if e.get("original_file")}
    on_disk = {p.name for p in RAW.iterdir() if p.is_file() and not p.name.startswith(".")}
    assert vendored <= on_disk
    # anything else must be the manifest or a paper's original a user dropped in
    assert on_disk - vendored <= originals | {"MANIFEST.yaml"}
    assert sum((RAW / f).stat().st_size for f in vendored) < 5_000_000


def test_stand_ins_name_an_original_file(manifest):
    for name, entry in manifest.items():
        if entry["stand_in"]:
            assert entry["original_file"] and entry["stand_in_for"], name
            assert entry["original_file"] != entry["file"], name


def test_unknown_data_set_lists_known_ones(manifest):
    with pytest.raises(DataError, match="unknown data set 'redwoods'.*breast.*pima"):
        D.prepare_dataset("redwoods", RAW, manifest)
    with pytest.raises(DataError, match="unknown data set 'Pima'"):
        D.dataset_entry(MANIFEST, "Pima")


def test_manifest_missing_key_is_named(tmp_path):
    doc = yaml.safe_load(MANIFEST.read_text())
    del doc["datasets"]["pima"]["sha256"]
    bad = tmp_path / "MANIFEST.yaml"
    bad.write_text(yaml.safe_dump(doc))
    with pytest.raises(DataError, match=r"'pima'.*sha256"):
        D.load_manifest(bad)


def test_missing_manifest(tmp_path):
    with pytest.raises(DataError, match="manifest not found"):
        D.load_manifest(tmp_path / "nope.yaml")


# ---------------------------------------------------------------- prepared data sets


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_prepared_shape_and_attrs(prepared, name):
    n, d, task, stand_in = EXPECTED[name]
    ds = prepared[name]
    assert ds["X"].dims == ("n", "feature")
    assert ds["X"].shape == (n, d)
    assert ds["y"].shape == (n,)
    assert ds["X"].dtype == np.float64 and ds["y"].dtype == np.float64
    assert ds.sizes["feature"] == d == len(set(ds["feature"].values.tolist()))
    assert ds.attrs["task"] == task
    assert ds.attrs["name"] == name
    assert ds.attrs["stand_in"] == stand_in and isinstance(ds.attrs["stand_in"], int)
    assert ds.attrs["sha256"] == D.load_manifest(MANIFEST)[name]["sha256"]
    assert ds.attrs["preprocessing"] and ds.attrs["source"]
    if stand_in:
        assert ds.attrs["stand_in_note"].startswith("STAND-IN")
    assert np.all(np.isfinite(ds["X"].values)) and np.all(np.isfinite(ds["y"].values))


@pytest.mark.parametrize("name", [k for k, v in EXPECTED.items() if v[2] == "classification"])
def test_classification_labels(prepared, name):
    y = prepared[name]["y"].values
    assert set(np.unique(y)) == {-1.0, 1.0}
    assert "+1" in prepared[name].attrs["label_mapping"]


@pytest.mark.parametrize("name", [k for k in EXPECTED if k != "mnist_subset"])
def test_covariates_standardised(prepared, name):
    X = prepared[name]["X"].values
    np.testing.assert_allclose(X.mean(axis=0), 0.0, atol=1e-10)
    np.testing.assert_allclose(X.std(axis=0), 1.0, rtol=1e-10)


def test_standardisation_is_invertible(prepared):
    ds = prepared["housing"]
    raw = ds["X"] * ds["X_scale"] + ds["X_mean"]
    assert float(raw.sel(feature="rm")[0]) == pytest.approx(6.575)
    assert float(ds["y"][0]) == pytest.approx(24.0)


def test_constant_columns_dropped_and_recorded(prepared):
    img = prepared["image_stand_in"]
    assert "region_pixel_count" not in img["feature"].values
    assert "constant columns dropped: region_pixel_count" in img.attrs["preprocessing"]
    assert "px00" not in prepared["usps_stand_in"]["feature"].values


def test_specific_derivations(prepared):
    # glass: 51 non-window (+1) vs 163 window
    assert (prepared["glass"]["y"] > 0).sum() == 51
    # breast: 239 malignant
    assert (prepared["breast"]["y"] > 0).sum() == 239
    # abalone: infants dropped, M = +1
    assert (prepared["abalone"]["y"] > 0).sum() == 1526
    # usps stand-in: 572 threes
    assert (prepared["usps_stand_in"]["y"] > 0).sum() == 572
    # thyroid: 35 hyperthyroid
    assert (prepared["thyroid"]["y"] > 0).sum() == 35
    # concrete target is the raw strength
    assert float(prepared["concrete"]["y"][0]) == pytest.approx(79.99)


def test_mnist_subset_scaled_to_unit_interval(prepared):
    ds = prepared["mnist_subset"]
    X = ds["X"].values
    assert X.min() == 0.0 and X.max() == 1.0
    assert sorted(np.unique(ds["y"].values)) == list(range(10))
    assert "divided by 255" in ds.attrs["preprocessing"]


def test_coal_events_and_binning(prepared):
    ds = prepared["coal"]
    t = ds["y"].values
    assert t.size == 191 and np.all(np.diff(t) >= 0)
    assert 1851 < t.min() < 1852 and 1962 < t.max() < 1963
    counts, edges = D.bin_events(t, ds.attrs["window_start"], ds.attrs["window_end"], 112)
    assert counts.sum() == 191 and counts.dtype == np.int64
    assert edges.shape == (113,) and edges[0] == 1851.0 and edges[-1] == 1963.0
    assert counts[0] == np.sum((t >= 1851) & (t < 1852))


def test_bin_events_rejects_bad_input():
    with pytest.raises(DataError, match="outside"):
        D.bin_events([1.0, 5.0], 0.0, 2.0, 4)
    with pytest.raises(DataError, match="n_bins"):
        D.bin_events([1.0], 0.0, 2.0, 0)
    with pytest.raises(DataError, match="start < end"):
        D.bin_events([1.0], 2.0, 0.0, 3)


# ---------------------------------------------------------------- failures


def test_corrupted_file_raises_naming_it(tmp_path):
    raw = _copy_raw(tmp_path, "pima.dat")
    with open(raw / "pima.dat", "ab") as fh:
        fh.write(b"1,2,3,4,5,6,7,8,tested_positive\n")
    with pytest.raises(DataError, match=r"checksum mismatch for .*pima\.dat: expected .*, got"):
        D.prepare_dataset("pima", raw, raw / "MANIFEST.yaml")


def test_missing_file_raises(tmp_path):
    raw = _copy_raw(tmp_path)
    with pytest.raises(DataError, match=r"not found: .*wisconsin\.dat"):
        D.prepare_dataset("breast", raw, raw / "MANIFEST.yaml")
    with pytest.raises(DataError, match="not found"):
        D.verify_file(raw / "nothing.csv", "0" * 64)


def _write_csv(path: Path, header, rows):
    path.write_text("\n".join([",".join(header)] + [",".join(map(str, r)) for r in rows]) + "\n")
    return path


def test_user_csv_with_nan_names_column(tmp_path):
    p = _write_csv(
        tmp_path / "u.csv",
        ["a", "b", "label"],
        [[1, 2, "x"], [2, "NA", "y"], [3, 1, "x"], [4, 0, "y"]],
    )
    with pytest.raises(DataError, match="column 'b'"):
        D.prepare_user_dataset(p, "label", "classification")
    p2 = _write_csv(tmp_path / "v.csv", ["a", "b", "t"], [[1, 2, 0.5], [2, 3, "nan"], [3, 1, 0.1]])
    with pytest.raises(DataError, match="column 't'"):
        D.prepare_user_dataset(p2, "t", "regression")


def test_user_csv_with_three_labels(tmp_path):
    p = _write_csv(tmp_path / "u.csv", ["a", "label"], [[1, "x"], [2, "y"], [3, "z"], [4, "x"]])
    with pytest.raises(DataError, match=r"exactly two values.*'x', 'y', 'z'"):
        D.prepare_user_dataset(p, "label", "classification")


def test_unexpected_label_in_vendored_format_is_listed(tmp_path):
    raw = _copy_raw(tmp_path)
    text = (RAW / "pima.dat").read_text().replace("tested_negative", "maybe", 1)
    (raw / "pima.dat").write_text(text)
    doc = yaml.safe_load((raw / "MANIFEST.yaml").read_text())
    doc["datasets"]["pima"]["sha256"] = D.sha256_file(raw / "pima.dat")
    (raw / "MANIFEST.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(DataError, match=r"unexpected label value\(s\) \['maybe'\].*pima\.dat"):
        D.prepare_dataset("pima", raw, raw / "MANIFEST.yaml")


def test_nan_in_vendored_format_names_column(tmp_path):
    raw = _copy_raw(tmp_path)
    lines = (RAW / "Boston.csv").read_text().splitlines()
    fields = lines[3].split(",")
    fields[6] = "NA"  # column rm
    lines[3] = ",".join(fields)
    (raw / "Boston.csv").write_text("\n".join(lines) + "\n")
    doc = yaml.safe_load((raw / "MANIFEST.yaml").read_text())
    doc["datasets"]["housing"]["sha256"] = D.sha256_file(raw / "Boston.csv")
    (raw / "MANIFEST.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(DataError, match=r"column 'rm' of .*Boston\.csv"):
        D.prepare_dataset("housing", raw, raw / "MANIFEST.yaml")


def test_non_numeric_covariate_names_column(tmp_path):
    p = _write_csv(tmp_path / "u.csv", ["a", "colour", "y"], [[1, "red", 1.0], [2, "blue", 2.0]])
    with pytest.raises(DataError, match="non-numeric value 'red' in column 'colour'"):
        D.prepare_user_dataset(p, "y", "regression")


def test_user_missing_target_column(tmp_path):
    p = _write_csv(tmp_path / "u.csv", ["a", "b"], [[1, 2], [2, 3]])
    with pytest.raises(DataError, match="target column 'y' not found"):
        D.prepare_user_dataset(p, "y", "regression")


# ---------------------------------------------------------------- user data and writing


def test_user_dataset_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    n = 40
    a = rng.normal(size=n)
    b = rng.normal(loc=5, scale=3, size=n)
    lab = np.where(a + rng.normal(scale=0.1, size=n) > 0, "yes", "no")
    rows = [[repr(float(ai)), repr(float(bi)), 7, li] for ai, bi, li in zip(a, b, lab)]
    p = _write_csv(tmp_path / "mine.csv", ["a", "b", "const", "label"], rows)
    ds = D.prepare_user_dataset(p, "label", "classification")
    assert ds.attrs["name"] == "mine" and ds.attrs["stand_in"] == 0
    assert ds.attrs["label_mapping"] == "no -> -1; yes -> +1"
    assert list(ds["feature"].values) == ["a", "b"]
    assert "constant columns dropped: const" in ds.attrs["preprocessing"]
    np.testing.assert_array_equal(ds["y"].values, np.where(lab == "yes", 1.0, -1.0))
    np.testing.assert_allclose(ds["X"].values[:, 1] * ds["X_scale"].values[1] + ds["X_mean"].values[1], b)

    out = tmp_path / "sub" / "mine.nc"
    D.write_dataset(ds, out)
    assert out.is_file() and not list(out.parent.glob("*.tmp"))
    back = xr.load_dataset(out)
    xr.testing.assert_allclose(back[["X", "y", "X_mean", "X_scale"]], ds[["X", "y", "X_mean", "X_scale"]])
    assert list(back["feature"].values) == ["a", "b"]
    for k in ("name", "task", "sha256", "preprocessing", "label_mapping", "stand_in"):
        assert back.attrs[k] == ds.attrs[k]

    with pytest.raises(DataError, match="non-numeric value 'yes' in column 'label'"):
        D.prepare_user_dataset(p, "b", "regression")
    p2 = _write_csv(
        tmp_path / "reg.csv", ["a", "b"], [[repr(float(ai)), repr(float(bi))] for ai, bi in zip(a, b)]
    )
    reg = D.prepare_user_dataset(p2, "b", "regression", name="reg")
    assert reg.attrs["name"] == "reg"
    np.testing.assert_allclose(reg["y"].values, b)


def test_user_numeric_labels_sorted_numerically(tmp_path):
    p = _write_csv(tmp_path / "u.csv", ["a", "c"], [[1, 10], [2, 9], [3, 10], [4, 9]])
    ds = D.prepare_user_dataset(p, "c", "classification")
    assert ds.attrs["label_mapping"] == "9 -> -1; 10 -> +1"
    np.testing.assert_array_equal(ds["y"].values, [1.0, -1.0, 1.0, -1.0])


def test_prepared_vendored_dataset_writes_netcdf(prepared, tmp_path):
    out = tmp_path / "coal.nc"
    D.write_dataset(prepared["coal"], out)
    back = xr.load_dataset(out)
    assert back.attrs["stand_in"] == 0 and back.attrs["window_end"] == 1963.0
    np.testing.assert_array_equal(back["y"].values, prepared["coal"]["y"].values)


# ---------------------------------------------------------------- paper's originals dropped in


def test_keel_header_is_skipped(tmp_path):
    raw = _copy_raw(tmp_path)
    header = (
        "@relation new-thyroid1\n"
        "@attribute T3resin integer [65, 144]\n@attribute Thyroxin real [0.5, 25.3]\n"
        "@attribute Triiodothyronine real [0.2, 10.0]\n@attribute Thyroidstimulating real [0.1, 56.4]\n"
        "@attribute TSH_value real [-0.7, 56.3]\n@attribute Class {positive, negative}\n"
        "@inputs T3resin, Thyroxin, Triiodothyronine, Thyroidstimulating, TSH_value\n"
        "@outputs Class\n@data\n"
    )
    (raw / "new-thyroid1.dat").write_text(header + (RAW / "new-thyroid1.dat").read_text())
    doc = yaml.safe_load((raw / "MANIFEST.yaml").read_text())
    doc["datasets"]["thyroid"]["sha256"] = D.sha256_file(raw / "new-thyroid1.dat")
    (raw / "MANIFEST.yaml").write_text(yaml.safe_dump(doc))
    ds = D.prepare_dataset("thyroid", raw, raw / "MANIFEST.yaml")
    assert ds["X"].shape == (215, 5)


def test_original_csv_replaces_stand_in(tmp_path, manifest):
    raw = _copy_raw(tmp_path)
    rng = np.random.default_rng(1)
    sexes = ["M", "F", "I"] * 10
    lines = [
        ",".join([s] + [f"{v:.4f}" for v in rng.uniform(0.1, 1.0, size=7)] + [str(int(rng.integers(1, 29)))])
        for s in sexes
    ]
    (raw / "abalone.data").write_text("\n".join(lines) + "\n")
    ds = D.prepare_dataset("abalone", raw, manifest)
    assert ds.attrs["stand_in"] == 0
    assert ds["X"].shape == (20, 8) and "rings" in ds["feature"].values
    assert "abalone.data" in ds.attrs["source"]
    assert ds.attrs["sha256"] == D.sha256_file(raw / "abalone.data")
    assert D.raw_file("abalone", raw, manifest) == raw / "abalone.data"


def test_original_raetsch_mat_replaces_stand_ins(tmp_path, manifest):
    scipy_io = pytest.importorskip("scipy.io")
    rng = np.random.default_rng(2)
    thy = {
        "x": rng.normal(size=(30, 5)),
        "t": np.where(rng.random((30, 1)) < 0.4, 1.0, -1.0),
        "train": np.ones((2, 20)),
        "test": np.ones((2, 10)),
    }
    img = {
        "x": rng.normal(size=(40, 18)),
        "t": np.repeat([[1.0], [-1.0]], 20, axis=0),
        "train": np.ones((2, 30)),
        "test": np.ones((2, 10)),
    }
    scipy_io.savemat(tmp_path / "benchmarks.mat", {"thyroid": thy, "image": img})
    ds = D.prepare_dataset("thyroid", tmp_path, manifest)
    assert ds.attrs["stand_in"] == 0 and ds["X"].shape == (30, 5)
    np.testing.assert_array_equal(ds["y"].values, thy["t"].ravel())
    ds2 = D.prepare_dataset("image_stand_in", tmp_path, manifest)
    assert ds2.attrs["stand_in"] == 0 and ds2["X"].shape == (40, 18)


def test_original_usps_mat_replaces_stand_in(tmp_path, manifest):
    scipy_io = pytest.importorskip("scipy.io")
    rng = np.random.default_rng(3)

    def part(n):
        digits = rng.integers(0, 10, size=n)
        labels = -np.ones((10, n))
        labels[digits, np.arange(n)] = 1.0
        return rng.uniform(-1, 1, size=(256, n)), labels, digits

    trp, trl, trd = part(60)
    tep, tel, ted = part(50)
    scipy_io.savemat(
        tmp_path / "usps_resampled.mat",
        {"train_patterns": trp, "train_labels": trl, "test_patterns": tep, "test_labels": tel},
    )
    ds = D.prepare_dataset("usps_stand_in", tmp_path, manifest)
    digits = np.concatenate([trd, ted])
    keep = np.isin(digits, [3, 5])
    assert ds.attrs["stand_in"] == 0 and ds["X"].shape == (keep.sum(), 256)
    np.testing.assert_array_equal(ds["y"].values, np.where(digits[keep] == 3, 1.0, -1.0))


def test_user_csv_quirks_are_refused_or_reported(tmp_path, caplog):
    """Issue 14 item 5: duplicate names refused; -1 and -1.0 one label; inf named as infinite;
    the label mapping and a dropped constant column are logged, not only stored in attributes."""
    dup = tmp_path / "dup.csv"
    dup.write_text("x1,x1,label\n1,2,0\n3,4,1\n5,6,0\n")
    with pytest.raises(D.DataError, match=r"duplicate column name\(s\) \['x1'\]"):
        D.prepare_user_dataset(dup, "label", "classification")
    same = tmp_path / "same.csv"
    same.write_text("a,c,label\n1,7,-1\n2,7,-1.0\n3,7,1\n4,7,1.0\n")
    with caplog.at_level("WARNING"):
        ds = D.prepare_user_dataset(same, "label", "classification")
    assert sorted(np.unique(ds["y"].values)) == [-1.0, 1.0] and ds.attrs["label_mapping"] == "-1 -> -1; 1 -> +1"
    assert "mapped -1 -> -1; 1 -> +1" in caplog.text and "constant column(s) dropped: c" in caplog.text
    inf = tmp_path / "inf.csv"
    inf.write_text("a,t\n1,2\ninf,3\n2,4\n")
    with pytest.raises(D.DataError, match=r"infinite value in column 'a'.*row\(s\): 2"):
        D.prepare_user_dataset(inf, "t", "regression")


def test_an_infinite_or_missing_label_is_refused_with_its_row(tmp_path):
    """'inf' in a classification target is a broken value, not a second class (it became +1)."""
    inf = tmp_path / "inf.csv"
    inf.write_text("a,label\n1,0\n2,inf\n3,0\n4,-Infinity\n")
    with pytest.raises(D.DataError, match=r"infinite value in target column 'label' of .*inf\.csv \(data row\(s\) 2, 4\)"):
        D.prepare_user_dataset(inf, "label", "classification")
    nan = tmp_path / "nan.csv"
    nan.write_text("a,label\n1,0\n2,1\n3,NaN\n")
    with pytest.raises(D.DataError, match=r"missing value in target column 'label' of .*nan\.csv \(data row\(s\) 3\)"):
        D.prepare_user_dataset(nan, "label", "classification")
