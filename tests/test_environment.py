"""The conda story (issue 14 item 10): environment.yml installs the same packages as pyproject.toml,
installs gpbayes itself, and every rule's `conda:` directive names that environment."""

import re
import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def _split(req: str) -> tuple[str, str]:
    m = re.fullmatch(r"\s*([A-Za-z0-9_.\-]+)(\[[^\]]*\])?\s*(.*?)\s*", req)
    assert m, req
    return m.group(1).lower().replace("_", "-"), m.group(3).replace(" ", "")


def pyproject_requirements() -> dict[str, str]:
    proj = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    reqs = list(proj["dependencies"])
    for extra in proj["optional-dependencies"].values():
        reqs += [r for r in extra if not r.startswith(proj["name"])]
    out: dict[str, str] = {}
    for r in reqs:
        name, spec = _split(r)
        assert out.get(name, spec) == spec, f"pyproject.toml names {name} twice with different versions"
        out[name] = spec
    return out


def conda_environment() -> dict:
    return yaml.safe_load((REPO / "environment.yml").read_text())


def test_environment_yml_and_pyproject_do_not_drift():
    env = conda_environment()
    conda = {}
    for dep in env["dependencies"]:
        if isinstance(dep, dict) or dep == "pip" or dep.startswith("python="):
            continue  # the pip section (gpbayes itself), pip, the interpreter
        name, spec = _split(dep)
        conda[name] = spec
    py = pyproject_requirements()
    assert conda == py, (f"only in environment.yml: {sorted(set(conda.items()) - set(py.items()))}; "
                         f"only in pyproject.toml: {sorted(set(py.items()) - set(conda.items()))}")


def test_environment_installs_gpbayes_itself():
    pip = [d for d in conda_environment()["dependencies"] if isinstance(d, dict)]
    assert pip and "-e ." in pip[0]["pip"]


def test_every_rule_runs_in_the_gpbayes_environment():
    name = conda_environment()["name"]
    for smk in sorted((REPO / "workflow" / "rules").glob("*.smk")):
        envs = re.findall(r"^\s*conda:\s*\n\s*(\S+)", smk.read_text(), flags=re.M)
        assert all(e.strip("\"'") == name for e in envs), f"{smk.name}: conda envs {set(envs)} (expected {name!r})"
