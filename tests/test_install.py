"""The library installs alone: a fresh virtual environment, ``pip install .`` without extras, then a sampling run.

No system site-packages: only what ``pyproject.toml`` declares (and its own
dependencies) is there.  The reproduction's stack (yaml, jsonschema,
scikit-learn, snakemake, netCDF4) is not installed, and the
library imports and samples without it.  pip's cache keeps this to tens of
seconds (``--no-compile`` skips byte-compiling the dependencies).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """
import importlib.util, sys
import numpy as np
import gpbayes as gb
assert "site-packages" in gb.__file__, gb.__file__
for name in ("yaml", "jsonschema", "sklearn", "snakemake", "netCDF4"):
    try:
        found = importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        found = False
    assert not found, name + " should not be installed by `pip install .`"
assert importlib.util.find_spec("threadpoolctl") is not None  # the library's thread policy (gpbayes.threads)
rng = np.random.default_rng(0)
X = rng.uniform(-2, 2, size=(15, 1))
y = np.sin(2 * X[:, 0]) + 0.1 * rng.standard_normal(15)
idata = gb.sample(gb.GPRegressor(X, y), method="slice", chains=2, draws=10, n_warmup=5, seed=1, progress=False)
assert idata.posterior["lengthscale"].shape == (2, 10, 1)
print(gb.summary(idata)["mean"].to_dict())
"""


@pytest.mark.slow
def test_pip_install_dot_gives_a_working_library_without_the_workflow_extras(tmp_path):
    src = tmp_path / "src"  # a copy: building in the worktree would leave build/ behind
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "src", src / "src", ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(system_site_packages=False, with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    res = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-compile",
                          str(src)], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    run = subprocess.run([str(python), "-c", SCRIPT], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "signal_variance" in run.stdout
