"""Load and validate the workflow configuration (also usable without Snakemake)."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import yaml

__all__ = ["ConfigError", "SCHEMA_PATH", "load_schema", "validate_config", "check_semantics", "load_config",
           "scale_settings"]

SCHEMA_PATH = Path(__file__).resolve().parent / "schemas" / "config.schema.yaml"


class ConfigError(ValueError):
    """The configuration is invalid; the message names the key and the problem."""


def load_schema(path=None) -> dict:
    with open(path or SCHEMA_PATH) as fh:
        return yaml.safe_load(fh)


def _where(error: jsonschema.ValidationError) -> str:
    return "/".join(str(p) for p in error.absolute_path) or "<top level>"


def validate_config(config: dict, schema: dict | None = None) -> dict:
    """Raise ConfigError naming every offending key; return the config unchanged."""
    schema = schema or load_schema()
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path))
    if errors:
        lines = [f"  - at '{_where(e)}': {e.message}" for e in errors]
        raise ConfigError("invalid gpbayes configuration:\n" + "\n".join(lines))
    return check_semantics(config)


def check_semantics(config: dict) -> dict:
    """The checks a schema cannot express; the Snakefile runs them after the schema validation.

    A user data set may not take the name of a vendored one (its prepared file would replace the
    papers' data and feed their figures and claims), and its path must be an existing ``.csv``.
    """
    reserved = _reserved_names(config)
    for name, spec in (config.get("user_datasets") or {}).items():
        if name in reserved:
            raise ConfigError(f"config user_datasets.{name}: the name '{name}' is a vendored data set "
                              f"({config['data']['manifest']}); a user set with that name would replace the "
                              "papers' data. Choose another name.")
        path = str(spec.get("path", ""))
        if not path.lower().endswith(".csv"):
            raise ConfigError(f"config user_datasets.{name}.path: must be a .csv file, got {path!r}")
        if not Path(path).is_file():
            raise ConfigError(f"config user_datasets.{name}.path: {path!r} does not exist (relative paths are "
                              "taken from the directory Snakemake runs in)")
    return config


def _reserved_names(config) -> set:
    try:
        with open(config["data"]["manifest"]) as fh:
            return set((yaml.safe_load(fh) or {}).get("datasets", {}))
    except (OSError, KeyError, TypeError):
        return set()


def load_config(path, overrides: dict | None = None) -> dict:
    with open(path) as fh:
        config = yaml.safe_load(fh)
    config.update(overrides or {})
    return validate_config(config)


def scale_settings(config: dict, experiment: str) -> dict:
    """The settings block of ``experiment`` for the configured scale."""
    return config[experiment]["scales"][config["scale"]]
