"""The README is a front page: short, its quickstart runs, its commands are the ones CI runs, its links resolve."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def test_readme_is_a_front_page_of_at_most_150_lines():
    assert len(README.read_text().splitlines()) <= 150


def test_the_readme_python_blocks_run(capsys):
    """The quickstart on the user's own arrays runs as written (its sizes take a few seconds)."""
    pytest.importorskip("arviz")
    code = blocks(README.read_text(), "python")
    assert code and "gb.sample" in code[0] and "gb.predict" in code[0] and "az.summary" in code[0]
    namespace: dict = {}
    for i, block in enumerate(code):
        exec(compile(block, f"README.md:python-block-{i}", "exec"), namespace)
    p = namespace["p"].values
    assert p.shape == (5,) and ((p > 0) & (p < 1)).all()
    assert "r_hat" in capsys.readouterr().out


def test_the_two_set_up_commands_are_the_ones_ci_and_users_run():
    """Set-up: one command installs and runs the default pipeline, one installs and runs the tests; .ci/run
    runs the README's test command word for word (the contract the comment in .ci/run states)."""
    text = README.read_text()
    setup = text.split("## Set-up: two commands", 1)[1].split("\n## ", 1)[0]
    bash = blocks(setup, "bash")
    assert bash[0].strip() == ('python3 -m venv .venv && .venv/bin/pip install -e ".[workflow]" && '
                               ".venv/bin/snakemake --cores 2")
    test_command = bash[1].strip()
    assert test_command.endswith(".venv/bin/pytest") and '".[test]"' in test_command
    ci = (ROOT / ".ci" / "run").read_text()
    assert test_command in ci.splitlines(), "the README's test command is not a line of .ci/run"


def test_every_relative_link_of_the_readme_resolves():
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README.read_text())
    local = [link for link in links if not re.match(r"[a-z]+:", link)]
    assert len(local) >= 10
    missing = [link for link in local if not (ROOT / link).exists()]
    assert not missing, missing
