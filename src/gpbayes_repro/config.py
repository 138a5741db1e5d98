"""Load and validate the workflow configuration (also usable without Snakemake)."""

from __future__ import annotations

import contextlib
import copy
import re
from pathlib import Path

import jsonschema
import yaml

__all__ = ["ConfigError", "SCHEMA_PATH", "load_schema", "validate_config", "check_semantics", "load_config",
           "scale_settings", "coerce_command_line_strings", "resolve_scales", "pop_derived_scales", "merged"]

SCHEMA_PATH = Path(__file__).resolve().parent / "schemas" / "config.schema.yaml"


class ConfigError(ValueError):
    """The configuration is invalid; the message names the key and the problem."""


def load_schema(path=None) -> dict:
    with open(path or SCHEMA_PATH) as fh:
        return yaml.safe_load(fh)


def _where(error: jsonschema.ValidationError) -> str:
    return "/".join(str(p) for p in error.absolute_path) or "<top level>"


def _explain(error: jsonschema.ValidationError) -> str:
    """One line per error; an unknown key is named first, with the nearest allowed keys and the full list."""
    import difflib

    where = _where(error)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = sorted(error.schema.get("properties", {}))
        unknown = [k for k in error.instance if k not in allowed]
        parts = []
        for k in unknown:
            near = difflib.get_close_matches(str(k), allowed, n=3, cutoff=0.5)
            hint = f" (did you mean {' or '.join(repr(n) for n in near)}?)" if near else ""
            parts.append(f"unknown key '{k}' at '{where}'{hint}")
        return "; ".join(parts) + f"; allowed keys at '{where}': {', '.join(allowed)}"
    return f"at '{where}': {error.message}"


def validate_config(config: dict, schema: dict | None = None) -> dict:
    """Raise ConfigError naming every offending key; return the config.

    Scale blocks that ``extends`` another are resolved first, in place (:func:`resolve_scales`), so
    that the schema checks the block a run would use.  Unknown keys are reported by name with the
    closest allowed keys, never by printing the schema; then the checks a schema cannot express run
    (:func:`check_semantics`).
    """
    resolve_scales(config)
    schema = schema or load_schema()
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path))
    if errors:
        lines = [f"  - {_explain(e)}" for e in errors]
        raise ConfigError("invalid gpbayes configuration:\n" + "\n".join(lines))
    return check_semantics(config)


EXTENDS = "extends"


def merged(base, override):
    """``base`` with ``override`` laid over it: mappings merge key by key (recursively), any other value
    (number, string, list) is replaced whole.  Neither argument is modified."""
    if not (isinstance(base, dict) and isinstance(override, dict)):
        return copy.deepcopy(override)
    out = copy.deepcopy(base)
    for key, value in override.items():
        out[key] = merged(base[key], value) if key in base else copy.deepcopy(value)
    return out


def _scale_tables(node, path=()):
    """(dotted path of the owner, its ``scales`` mapping) for every ``scales`` mapping in the config."""
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        if key == "scales" and isinstance(value, dict) and path:
            yield ".".join(path), value
        else:
            yield from _scale_tables(value, (*path, str(key)))


def resolve_scales(config: dict) -> dict[str, dict[str, str]]:
    """Resolve every scale block that names a base block with ``extends``; in place.

    ``<experiment>.scales.decide: {extends: default, split_looks: [3, 5, 10]}`` becomes the
    ``default`` block with ``split_looks`` replaced (mappings merge key by key, see :func:`merged`);
    a base may itself extend another (resolved first; a cycle is an error).  The resolved block
    holds no ``extends`` key, so the schema checks it like the others.  Returns ``{owner: {scale:
    base}}`` for the blocks resolved by this call (``{"pm_gpc.tables": {"decide": "default"}}``);
    a second call finds nothing to resolve and returns ``{}``.  Errors name the key and the scales
    the owner has.
    """
    bases = {}
    for owner, scales in _scale_tables(config):
        pending = {name: block[EXTENDS] for name, block in scales.items()
                   if isinstance(block, dict) and EXTENDS in block}
        for name, base in pending.items():
            key = f"{owner}.scales.{name}.{EXTENDS}"
            if not isinstance(base, str) or base not in scales:
                raise ConfigError(f"config {key}: {base!r} is not a scale of {owner}.scales; "
                                  f"allowed: {', '.join(sorted(n for n in scales if n != name))}")
        done = {}

        def resolve(name, chain):
            if name in done:
                return done[name]
            block = scales[name]
            if not (isinstance(block, dict) and EXTENDS in block):
                return block
            if name in chain:
                cycle = " -> ".join([*chain[chain.index(name):], name])
                raise ConfigError(f"config {owner}.scales.{name}.{EXTENDS}: the scales extend each other "
                                  f"({cycle}); one of them must be a complete block")
            own = {k: v for k, v in block.items() if k != EXTENDS}
            done[name] = merged(resolve(block[EXTENDS], [*chain, name]), own)
            return done[name]

        for name in pending:
            scales[name] = resolve(name, [])
        if pending:
            bases[owner] = pending
    return bases


def pop_derived_scales(config: dict, bases: dict[str, dict[str, str]]) -> dict[str, dict[str, dict]]:
    """Take the resolved derived blocks (``bases``, from :func:`resolve_scales`) out of the config; in place.

    Returns ``{owner: {scale: block}}``.  The workflow keeps them apart so that the config dicts its
    rules pass to jobs as params are those of a run without the derived scales: adding
    ``scales.decide`` then changes no job's params, and a finished default run's jobs are not re-run
    (Snakemake re-runs a job whose params changed).
    """
    out = {}
    for owner, names in bases.items():
        node = config
        for key in owner.split("."):
            node = node[key]
        out[owner] = {name: node["scales"].pop(name) for name in names}
    return out


_UNSET = object()


def coerce_command_line_strings(config: dict, schema: dict | None = None) -> list[str]:
    """Give typed values to the strings Snakemake's ``--config`` makes of nested values; in place.

    ``snakemake --config 'regression_mh={scales: {smoke: {n_chains: 3}}}'`` parses the nested value
    with YAML's BaseLoader, which keeps every scalar a string (``'3'``), so the schema would refuse
    it.  A string is replaced only where the schema wants an integer, number or boolean (or a
    fixed number, ``const``/``enum``) and the string reads as one (YAML 1.1, or a float such as
    ``1e-6``); anything else is left for the validation to report.  Returns the changed keys.
    """
    validator = jsonschema.Draft202012Validator(schema or load_schema())
    changed = []
    while True:
        fixes = [(list(e.absolute_path), v) for e in _leaf_errors(validator.iter_errors(config))
                 if isinstance(e.instance, str) and (v := _typed(e, validator)) is not _UNSET]
        fixes = [(path, v) for path, v in fixes if path and "/".join(map(str, path)) not in changed]
        if not fixes:
            return changed
        for path, value in fixes:
            node = config
            for k in path[:-1]:
                node = node[k]
            node[path[-1]] = value
            changed.append("/".join(map(str, path)))


def _leaf_errors(errors):
    for e in errors:
        yield e
        yield from _leaf_errors(e.context or [])


def _typed(error, validator):
    """The typed reading of the string ``error.instance`` that the failed keyword accepts, or _UNSET."""
    text = error.instance
    candidates = []
    with contextlib.suppress(yaml.YAMLError):
        candidates.append(yaml.safe_load(text))
    with contextlib.suppress(ValueError):
        candidates.append(float(text))
    for value in candidates:
        if isinstance(value, str) or value is None:
            continue
        if error.validator == "type":
            wanted = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
            if set(wanted) & {"integer", "number", "boolean"} and any(validator.is_type(value, t) for t in wanted):
                return value
        elif error.validator == "const" and value == error.validator_value and type(value) is type(error.validator_value):
            return value
        elif error.validator == "enum" and any(value == x and type(value) is type(x) for x in error.validator_value):
            return value
    return _UNSET


# the config lists of data-set names and the task each needs ("*": every key at that level); a name
# in them may be a vendored data set or a user data set
_DATASET_LISTS = (
    (("regression_mh", "datasets"), "regression"),
    (("pm_gpc", "real", "datasets"), "classification"),
    (("pm_gpc", "capacity", "datasets"), "classification"),
    (("amis", "scales", "*", "regression_datasets"), "regression"),
    (("amis", "scales", "*", "classification_datasets"), "classification"),
)
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def check_semantics(config: dict) -> dict:
    """The checks a schema cannot express; the Snakefile runs them after the schema validation.

    A user data set may not take the name of a vendored one (its prepared file would replace the
    papers' data and feed their figures and claims), its name must be usable as a file name, and
    its path must be an existing ``.csv``.  Every name in an experiment's data-set list must be a
    vendored or a user data set of the task the experiment needs.  Every ``scales`` mapping must
    hold the configured ``scale`` (``decide`` is optional in the schema).  Each error names the key.
    """
    scale = config.get("scale")
    for owner, scales in _scale_tables(config):
        if scale not in scales:
            raise ConfigError(f"config {owner}.scales: no block for the configured scale {scale!r}; "
                              f"it has {', '.join(sorted(scales))}")
    manifest = config["data"]["manifest"]
    vendored = _manifest_entries(manifest)
    user = config.get("user_datasets") or {}
    for name, spec in user.items():
        if name in vendored:
            raise ConfigError(f"config user_datasets.{name}: the name '{name}' is a vendored data set "
                              f"({manifest}); a user set with that name would replace the papers' data. "
                              "Choose another name.")
        if not _NAME.fullmatch(name):
            raise ConfigError(f"config user_datasets.{name}: the name becomes the file name "
                              "data/processed/<name>.nc; use letters, digits, '_', '-' and '.' only")
        path = str(spec.get("path", ""))
        if not path.lower().endswith(".csv"):
            raise ConfigError(f"config user_datasets.{name}.path: must be a .csv file, got {path!r}")
        if not Path(path).is_file():
            raise ConfigError(f"config user_datasets.{name}.path: {path!r} does not exist (relative paths are "
                              "taken from the directory Snakemake runs in)")
    for key, names, need in _dataset_lists(config):
        for name in names:
            if name in user:
                task, source = user[name].get("task"), f"user_datasets.{name}.task"
            elif name in vendored:
                task, source = (vendored[name] or {}).get("task"), manifest
            else:
                raise ConfigError(f"config {key}: '{name}' is neither a vendored data set ({manifest}: "
                                  f"{', '.join(sorted(vendored))}) nor a user data set (user_datasets: "
                                  f"{', '.join(sorted(user)) or 'none'})")
            if task != need:
                raise ConfigError(f"config {key}: '{name}' is a {task} data set ({source}); "
                                  f"this list takes {need} data sets")
    return config


def _dataset_lists(config: dict):
    """(dotted key, names, task needed) for every list of ``_DATASET_LISTS`` present in ``config``."""

    def walk(node, path, done):
        if not path:
            yield ".".join(done), list(node or [])
        elif isinstance(node, dict):
            for k in (node if path[0] == "*" else [path[0]] if path[0] in node else []):
                yield from walk(node[k], path[1:], [*done, str(k)])

    for path, need in _DATASET_LISTS:
        for key, names in walk(config, path, []):
            yield key, names, need


def _manifest_entries(manifest) -> dict:
    """Vendored data-set name -> manifest entry.

    An unreadable manifest is an error, not an empty list: the checks above would otherwise pass
    silently (relative paths are taken from the directory Snakemake runs in).
    """
    try:
        with open(manifest) as fh:
            doc = yaml.safe_load(fh) or {}
    except OSError as err:
        raise ConfigError(f"config data.manifest: cannot read {manifest!r} ({err.strerror}; relative paths are "
                          "taken from the directory Snakemake runs in)") from None
    return dict(doc.get("datasets", doc))


def load_config(path, overrides: dict | None = None) -> dict:
    with open(path) as fh:
        config = yaml.safe_load(fh)
    config.update(overrides or {})
    return validate_config(config)


def scale_settings(config: dict, experiment: str) -> dict:
    """The settings block of ``experiment`` for the configured scale."""
    return config[experiment]["scales"][config["scale"]]
