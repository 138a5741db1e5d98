import json
from pathlib import Path

import yaml

SCALE = config["scale"]
SEED = int(config["seed"])
RAW = config["data"]["raw_dir"]
PROCESSED = config["data"]["processed_dir"]
USER_DATASETS = config.get("user_datasets") or {}

with open(config["data"]["manifest"]) as _fh:
    MANIFEST = yaml.safe_load(_fh)


def manifest_entries():
    """Data-set name -> manifest entry."""
    return MANIFEST.get("datasets", MANIFEST)


def raw_files(name):
    """Raw input files of a data set (vendored or the user's CSV)."""
    if name in USER_DATASETS:
        return [USER_DATASETS[name]["path"]]
    entries = manifest_entries()
    if name not in entries:
        raise ValueError(
            f"unknown data set {name!r}: not in {config['data']['manifest']} "
            f"({sorted(entries)}) nor in config user_datasets ({sorted(USER_DATASETS)})"
        )
    entry = entries[name]
    files = [f"{RAW}/{entry['file']}"]
    # a user who has the paper's original file drops it into data/raw/
    original = entry.get("original_file")
    if original and Path(f"{RAW}/{original}").exists():
        files.append(f"{RAW}/{original}")
    return files


def settings(experiment):
    return config[experiment]["scales"][SCALE]


def regression_mh_targets():
    return [f"figures/regression_mh/{ds}_traces.pdf" for ds in RMH["datasets"]] + [
        f"results/regression_mh/{ds}/diagnostics.csv" for ds in RMH["datasets"]
    ]


def claim_files():
    return ["results/claims/foundation.json", "results/claims/pm_gpc.json"]


def pm_gpc_targets():
    return ["figures/pm_gpc/fig2.pdf"]


def all_targets():
    out = []
    out += regression_mh_targets()
    out += pm_gpc_targets()
    out += ["results/claims/claims.html"]
    return out
