"""The conda story (issue 14 item 10): environment.yml and the rules' workflow/envs/gpbayes.yaml list the
packages of pyproject.toml, both environments get gpbayes itself, and every rule uses the one env file."""

import re
import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def _split(req: str) -> tuple[str, str]:
    m = re.fullmatch(r"\s*([A-Za-z0-9_.\-]+)(\[[^\]]*\])?\s*(.*?)\s*", req)
    assert m, req
    return m.group(1).lower().replace("_", "-"), m.group(3).replace(" ", "")


def pyproject_requirements(extras=None) -> dict[str, str]:
    proj = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    reqs = list(proj["dependencies"])
    for name, extra in proj["optional-dependencies"].items():
        if extras is None or name in extras:
            reqs += [r for r in extra if not r.startswith(proj["name"])]
    out: dict[str, str] = {}
    for r in reqs:
        name, spec = _split(r)
        assert out.get(name, spec) == spec, f"pyproject.toml names {name} twice with different versions"
        out[name] = spec
    return out


def conda_environment(path="environment.yml") -> dict:
    return yaml.safe_load((REPO / path).read_text())


def conda_packages(path) -> dict[str, str]:
    out = {}
    for dep in conda_environment(path)["dependencies"]:
        if isinstance(dep, dict) or dep == "pip" or re.match(r"python\s*[=<>]", dep):
            continue  # the pip section (gpbayes itself), pip, the interpreter
        name, spec = _split(dep)
        out[name] = spec
    return out


def _same(conda: dict, py: dict, what: str):
    assert conda == py, (f"only in {what}: {sorted(set(conda.items()) - set(py.items()))}; "
                         f"only in pyproject.toml: {sorted(set(py.items()) - set(conda.items()))}")


def test_environment_yml_and_pyproject_do_not_drift():
    _same(conda_packages("environment.yml"), pyproject_requirements(), "environment.yml")


def test_rule_environment_and_pyproject_do_not_drift():
    """The rules need the library's dependencies and pandas; Snakemake itself runs outside the job env."""
    py = {k: v for k, v in pyproject_requirements(extras=("workflow",)).items() if not k.startswith("snakemake")}
    _same(conda_packages("workflow/envs/gpbayes.yaml"), py, "workflow/envs/gpbayes.yaml")


def test_post_deploy_script_installs_this_checkout_from_any_working_directory(tmp_path):
    import os
    import subprocess

    stub = tmp_path / "bin"
    stub.mkdir()
    (stub / "python").write_text('#!/bin/sh\necho "$@" > "$STUB_OUT"\n')
    (stub / "python").chmod(0o755)
    script = REPO / "workflow" / "envs" / "gpbayes.post-deploy.sh"
    env = {**os.environ, "PATH": f"{stub}:{os.environ['PATH']}", "STUB_OUT": str(tmp_path / "args")}
    for cwd in (REPO, REPO / ".test"):
        res = subprocess.run(["bash", str(script)], cwd=cwd, env=env, capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        assert (tmp_path / "args").read_text().split() == ["-m", "pip", "install", "--no-deps", "-e", str(REPO)]
    res = subprocess.run(["bash", str(script)], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert res.returncode == 1 and "no gpbayes checkout" in res.stderr


def test_environment_installs_gpbayes_itself():
    pip = [d for d in conda_environment()["dependencies"] if isinstance(d, dict)]
    assert pip and "-e ." in pip[0]["pip"]


def test_every_rule_runs_in_the_gpbayes_environment():
    for smk in sorted((REPO / "workflow" / "rules").glob("*.smk")):
        envs = re.findall(r"^\s*conda:\s*\n\s*(\S+)", smk.read_text(), flags=re.M)
        if smk.name == "common.smk":
            continue  # functions only
        assert envs and all(e.strip("\"'") == "../envs/gpbayes.yaml" for e in envs), f"{smk.name}: {set(envs)}"
