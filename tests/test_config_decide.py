"""The decide scale (issue 32 sec. 6): scale blocks that extend another, resolved before validation."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from gpbayes_repro import config as gconfig

REPO = Path(__file__).resolve().parents[1]

# owner of a `scales` mapping -> the keys its decide block raises over default (config/config.yaml)
# (and the keys only the decide block has: the registered next pass of issue 32)
DECIDE_ONLY = {"pm_gpc.tables": {"ep_la_futility"}, "amis": {"confirm"}}
DECIDE_KEYS = {
    "regression_mh": {"n_draws"},
    "pm_gpc.fig2": set(),
    "pm_gpc.tables": {"ep_la_looks"},
    "pm_gpc.real": set(),
    "pm_gpc.capacity": {"split_looks"},
    "slice_ma": {"n_chains"},
    "sparse_mcmc": set(),
    "gplvm": {"joint_n_burn", "joint_n_draws", "joint_nuts_cases"},  # issue 40: the exact joint chain set (replica exchange), 4x the default sweeps; the NUTS set in Case 1
    "amis": {"sequential"},
}


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch):
    monkeypatch.chdir(REPO)  # data.manifest is relative to the directory Snakemake runs in


def shipped():
    with open(REPO / "config" / "config.yaml") as fh:
        return yaml.safe_load(fh)


def node(cfg, owner):
    for key in owner.split("."):
        cfg = cfg[key]
    return cfg


def test_every_scales_mapping_has_a_decide_block_extending_default():
    cfg = shipped()
    owners = {owner for owner, _ in gconfig._scale_tables(cfg)}
    assert owners == set(DECIDE_KEYS)
    for owner in owners:
        assert node(cfg, owner)["scales"]["decide"]["extends"] == "default", owner


def test_decide_resolves_validates_and_equals_default_but_the_listed_keys():
    cfg = shipped()
    cfg["scale"] = "decide"
    bases = gconfig.resolve_scales(cfg)
    assert bases == {owner: {"decide": "default"} for owner in DECIDE_KEYS}
    gconfig.validate_config(cfg)
    for owner, keys in DECIDE_KEYS.items():
        scales = node(cfg, owner)["scales"]
        decide, default = scales["decide"], scales["default"]
        assert "extends" not in decide
        assert set(decide) == set(default) | DECIDE_ONLY.get(owner, set()), owner
        differ = {k for k in default if decide[k] != default[k]}
        assert differ == keys, owner
    # the raised caps end beyond the default's and keep its first look
    t = cfg["pm_gpc"]["tables"]["scales"]
    assert t["decide"]["ep_la_looks"][0] == t["default"]["ep_la_looks"][0] and t["decide"]["ep_la_looks"][-1] == 16
    c = cfg["pm_gpc"]["capacity"]["scales"]
    assert c["decide"]["split_looks"][:2] == c["default"]["split_looks"] and c["decide"]["split_looks"][-1] == 40
    a = cfg["amis"]["scales"]
    assert a["decide"]["sequential"]["regression"] == a["default"]["sequential"]["regression"]
    assert a["decide"]["sequential"]["looks"] > a["default"]["sequential"]["looks"]
    # the registered next pass: F&G's EP >= LA design runs to its cap; AMIS claim 1's confirmatory block starts
    # past every replicate the sequential design can run
    assert t["decide"]["ep_la_futility"] is False
    conf = a["decide"]["confirm"]["claim1"]
    seq = a["decide"]["sequential"]
    assert conf["first_replicate"] >= seq["regression"]["start"] + (seq["looks"] - 1) * seq["regression"]["block"]
    # M&A claim 2 is registered UNDECIDABLE_ON_DATA: the decide tier spends no further draws on it
    s = cfg["slice_ma"]["scales"]
    assert s["decide"]["synthetic"] == s["default"]["synthetic"]
    assert s["decide"]["synthetic_draws"] == s["default"]["synthetic_draws"]


def test_resolution_is_in_place_once_and_leaves_the_base_alone():
    cfg = shipped()
    default_before = copy.deepcopy(cfg["amis"]["scales"]["default"])
    assert gconfig.resolve_scales(cfg)
    assert gconfig.resolve_scales(cfg) == {}
    assert cfg["amis"]["scales"]["default"] == default_before


def test_popping_the_derived_blocks_gives_the_config_without_them():
    """The dicts the rules pass to jobs as params are the same with or without scales.decide."""
    with_decide = shipped()
    bases = gconfig.resolve_scales(with_decide)
    gconfig.validate_config(with_decide)
    plans = gconfig.pop_derived_scales(with_decide, bases)
    without = shipped()
    for owner in DECIDE_KEYS:
        del node(without, owner)["scales"]["decide"]
    gconfig.validate_config(without)
    assert with_decide == without
    assert plans["pm_gpc.capacity"]["decide"]["split_looks"] == [3, 5, 20, 40]


def test_merged_replaces_lists_and_merges_mappings():
    base = {"a": [1, 2], "b": {"x": 1, "y": {"p": 1}}, "c": 3}
    out = gconfig.merged(base, {"a": [9], "b": {"y": {"q": 2}}, "d": 4})
    assert out == {"a": [9], "b": {"x": 1, "y": {"p": 1, "q": 2}}, "c": 3, "d": 4}
    assert base == {"a": [1, 2], "b": {"x": 1, "y": {"p": 1}}, "c": 3}


def test_bad_extends_names_the_key_and_the_scales():
    cfg = shipped()
    cfg["pm_gpc"]["capacity"]["scales"]["decide"]["extends"] = "defualt"
    with pytest.raises(gconfig.ConfigError) as err:
        gconfig.validate_config(cfg)
    msg = str(err.value)
    assert "pm_gpc.capacity.scales.decide.extends: 'defualt' is not a scale of pm_gpc.capacity.scales" in msg
    assert "allowed: default, paper, smoke" in msg


def test_scales_extending_each_other_are_refused():
    cfg = shipped()
    scales = cfg["regression_mh"]["scales"]
    scales["smoke"] = {"extends": "decide"}
    scales["decide"]["extends"] = "smoke"
    with pytest.raises(gconfig.ConfigError) as err:
        gconfig.resolve_scales(cfg)
    assert "regression_mh.scales.smoke.extends: the scales extend each other (smoke -> decide -> smoke)" in str(err.value)


def test_a_bad_override_is_reported_at_the_decide_block():
    cfg = shipped()
    cfg["pm_gpc"]["capacity"]["scales"]["decide"]["split_looks"] = [3, "five"]
    with pytest.raises(gconfig.ConfigError, match="pm_gpc/capacity/scales/decide/split_looks/1"):
        gconfig.validate_config(cfg)


def test_an_unknown_override_key_is_named():
    cfg = shipped()
    cfg["amis"]["scales"]["decide"]["sequentail"] = {"looks": 3}
    with pytest.raises(gconfig.ConfigError, match="unknown key 'sequentail' at 'amis/scales/decide'"):
        gconfig.validate_config(cfg)


def test_the_configured_scale_must_exist_in_every_experiment():
    cfg = shipped()
    cfg["scale"] = "decide"
    del cfg["gplvm"]["scales"]["decide"]
    with pytest.raises(gconfig.ConfigError, match="gplvm.scales: no block for the configured scale 'decide'"):
        gconfig.validate_config(cfg)


@pytest.mark.parametrize("block,n_a,n_b,per_job,same", [
    (0, 5, 16, 3, True),     # F&G PM block 0 (chains 0-2) under the default's cap 5 and the decide cap 16
    (1, 5, 16, 3, False),    # the default's short block 1 (chains 3-4) holds chains 3-5 under 16
    (1, 6, 16, 3, True),
    (2, 5, 16, 3, False),    # empty under 5
    (1, 24, 48, 12, True),   # AMIS regression block 1 under the caps 24 and 48
    (2, 24, 48, 12, False),
    (0, 3, 5, 3, True),      # M&A block 0 with 3 and 5 chains per method
])
def test_same_block(block, n_a, n_b, per_job, same):
    from gpbayes_repro.indices import same_block

    assert same_block(block, n_a, n_b, per_job) is same
    assert same_block(block, n_b, n_a, per_job) is same
