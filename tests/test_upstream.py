"""Committed results keyed by what is upstream of them (gpbayes_repro.upstream)."""

from pathlib import Path

from gpbayes_repro import upstream


def _tree(root):
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "a.py").write_text("x = 1\n")
    (root / "config").mkdir()
    (root / "config" / "config.yaml").write_text("scale: default\n")
    (root / "data" / "processed").mkdir(parents=True)
    (root / "data" / "raw.csv").write_text("1,2\n")
    (root / "workflow").mkdir()
    (root / "workflow" / "Snakefile").write_text("rule all:\n")


def test_fresh_until_an_upstream_file_changes_and_then_names_it(tmp_path):
    _tree(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    upstream.snapshot(out, root=tmp_path, commit="abc")
    assert upstream.compare(out, root=tmp_path)["fresh"]
    # generated files do not count
    (tmp_path / "data" / "processed" / "x.nc").write_text("derived")
    (tmp_path / "src" / "pkg" / "__pycache__").mkdir()
    (tmp_path / "src" / "pkg" / "__pycache__" / "a.pyc").write_text("cache")
    assert upstream.compare(out, root=tmp_path)["fresh"]
    (tmp_path / "config" / "config.yaml").write_text("scale: paper\n")
    (tmp_path / "src" / "pkg" / "b.py").write_text("y = 2\n")
    res = upstream.compare(out, root=tmp_path)
    assert not res["fresh"] and res["changed"] == {"code": ["src/pkg/b.py"], "config": ["config/config.yaml"]}
    text = upstream.describe(res)
    assert text.startswith("stale") and "config/config.yaml" in text and "src/pkg/b.py" in text


def test_outputs_without_a_record_are_never_fresh(tmp_path):
    res = upstream.compare(tmp_path)
    assert not res["fresh"] and not res["recorded"] and upstream.describe(res).startswith("stale: no record")


def test_the_reporting_only_modules_are_imported_by_no_job():
    """``upstream.REPORTING_ONLY`` leaves modules out of the key on the ground that no job computing a result
    imports them: no other module of src/ and no workflow file but the claims page's renderer names them in an
    import (a lazy one included), so a change to them cannot change a committed claims file."""
    import re

    root = Path(__file__).resolve().parents[1]
    names = {Path(p).stem for p in upstream.REPORTING_ONLY}
    pattern = re.compile(r"(import|lazy_module\(|import_module\().*\b(" + "|".join(sorted(names)) + r")\b")
    offenders = []
    for path in [*root.joinpath("src").rglob("*.py"), *root.joinpath("workflow").rglob("*.py"),
                 *root.joinpath("workflow").rglob("*.smk"), root / "workflow" / "Snakefile"]:
        rel = path.relative_to(root).as_posix()
        if rel in upstream.REPORTING_ONLY or rel == "workflow/scripts/claims_report.py" or "__pycache__" in rel:
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if pattern.search(line) and not line.lstrip().startswith("#"):
                offenders.append(f"{rel}:{i}: {line.strip()}")
    assert not offenders, offenders
    # and they are left out of the key
    keyed = upstream.file_hashes(root)["code"]
    assert not set(keyed) & set(upstream.REPORTING_ONLY)
    assert "src/gpbayes_repro/claims.py" in keyed


def test_a_docstring_or_comment_edit_keeps_results_fresh_and_a_code_edit_does_not(tmp_path):
    _tree(tmp_path)
    src = tmp_path / "src" / "pkg" / "a.py"
    src.write_text('"""Module."""\n\n\ndef f(x):\n    """Twice x."""\n    return 2 * x  # double\n')
    out = tmp_path / "out"
    out.mkdir()
    upstream.snapshot(out, root=tmp_path)
    # docstrings, comments and layout changed: what the code does did not
    src.write_text('"""Module, re-worded."""\n\ndef f(x):\n    """Two times x (eq. 1)."""\n    # the doubling\n'
                   '    return 2 * x\n')
    assert upstream.compare(out, root=tmp_path)["fresh"]
    # a constant changed: stale, and the file is named
    src.write_text('"""Module."""\n\n\ndef f(x):\n    """Twice x."""\n    return 3 * x\n')
    assert upstream.compare(out, root=tmp_path)["changed"] == {"code": ["src/pkg/a.py"]}
    # a docstring that becomes code (a string that is not the first statement) counts
    src.write_text('"""Module."""\n\n\ndef f(x):\n    y = 2 * x\n    "Twice x."\n    return y\n')
    assert not upstream.compare(out, root=tmp_path)["fresh"]
    # a non-Python file is compared byte for byte
    src.write_text('"""Module."""\n\n\ndef f(x):\n    """Twice x."""\n    return 2 * x  # double\n')
    (tmp_path / "config" / "config.yaml").write_text("scale: default  # a comment\n")
    assert upstream.compare(out, root=tmp_path)["changed"] == {"config": ["config/config.yaml"]}


def test_fingerprints_from_another_python_version_are_not_trusted(tmp_path):
    import json

    _tree(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    path = upstream.snapshot(out, root=tmp_path)
    doc = json.loads(path.read_text())
    doc["code_fingerprints"]["python"] = "2.7"
    path.write_text(json.dumps(doc))
    (tmp_path / "src" / "pkg" / "a.py").write_text("x = 1  # one\n")
    assert upstream.compare(out, root=tmp_path)["changed"] == {"code": ["src/pkg/a.py"]}


def test_no_module_upstream_of_a_result_reads_a_docstring():
    """The code fingerprint ignores docstrings on the ground that no result depends on one: only the
    reporting modules' command-line descriptions and ``gb.sample``'s help text read ``__doc__``."""
    root = Path(__file__).resolve().parents[1]
    allowed = set(upstream.REPORTING_ONLY) | {"src/gpbayes/api.py"}
    readers = sorted(p.relative_to(root).as_posix() for d in ("src", "workflow") for p in root.joinpath(d).rglob("*.py")
                     if "__doc__" in p.read_text() or "getdoc" in p.read_text())
    assert set(readers) <= allowed, readers
    api = root.joinpath("src/gpbayes/api.py").read_text()
    assert [ln for ln in api.splitlines() if "__doc__" in ln] == [
        'sample.__doc__ = sample.__doc__.replace("    {method defaults}\\n", inference.defaults_doc(indent=4))']
