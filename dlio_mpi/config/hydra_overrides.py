"""The DLIO benchmark's command line as Hydra reads it: overrides in Hydra's grammar, parsed by
Hydra's own override parser, and --config-dir / --config-name choosing the workload file.

    key=value        set a key
    +key=value       add a key the workload does not set (an error if it does)
    ++key=value      set a key, whether the workload sets it or not
    ~key, ~key=value delete a key the workload sets (with a value: only if it holds that value);
                     the key then takes its default
    workload=NAME    the workload file: NAME.yaml in --config-dir's workload/ folder, else the
                     shipped workload NAME

Keys may carry the DLIO benchmark's `workload.` prefix (`++workload.dataset.num_files_train=8`,
as its users and MLPerf Storage's mlpstorage write them). Values follow Hydra: quoted strings
('a b', "x=y"), lists [a,b], mappings {a:1}; `null` gives the key its default. Since the shell
strips quotes, a value that Hydra's grammar refuses (x=y unquoted) is taken as the text given.
Every key of this project's schema has a default, so key=value sets any known key, where Hydra
would ask for + on a key the workload file leaves out. Hydra's own settings (`hydra.*`) are
accepted: hydra.run.dir is DLIO's output folder (output.folder unless given), the rest
configures Hydra's logging and is ignored."""
from __future__ import annotations

import os
from dataclasses import dataclass

from dlio_mpi.config.errors import ConfigError, closest
from dlio_mpi.config.values import CommandLineText, command_line_yaml
from dlio_mpi.config.schema import SCHEMA

KINDS = {"CHANGE": "set", "ADD": "add", "FORCE_ADD": "force", "DEL": "delete"}
DLIO_PREFIX = "workload."
# top-level keys of a DLIO workload file that hold a name rather than a section
NAMED_SECTIONS = ("model", "framework")
# sections whose keys may be mappings set entry by entry (io.mpiio_hints.cb_nodes=4)
MAPPING_SECTIONS = ("io", "model", "output")


@dataclass(frozen=True)
class Override:
    """One override: kind is set, add, force or delete; key is section.key (or
    section.key.entry for a mapping entry); value is None for a delete without a value and
    for null (the key's default)."""
    kind: str
    section: str
    key: str
    value: object
    text: str

    @property
    def has_value(self):
        return self.kind != "delete" or self.value is not None

    @property
    def name(self):
        return f"{self.section}.{self.key}"


@dataclass(frozen=True)
class CommandLine:
    """The overrides in order, the workload named (workload=NAME) and Hydra's run folder."""
    overrides: tuple
    workload: str | None = None
    run_dir: str | None = None


_parser = None


def _hydra_parser():
    global _parser
    if _parser is None:
        from hydra.core.override_parser.overrides_parser import OverridesParser
        _parser = OverridesParser.create()
    return _parser


def _split(item):
    """(kind, key, value text or None) of an override, by its prefix and its first '='."""
    kind = "set"
    body = item
    if body.startswith("++"):
        kind, body = "force", body[2:]
    elif body.startswith("+"):
        kind, body = "add", body[1:]
    elif body.startswith("~"):
        kind, body = "delete", body[1:]
    if "=" not in body:
        if kind != "delete":
            raise ConfigError(f"{item!r}: an override is key=value, +key=value, ++key=value "
                              "or ~key (Hydra's grammar)")
        return kind, body.strip(), None
    key, text = body.split("=", 1)
    return kind, key.strip(), text.strip()


# characters of a value that only Hydra's grammar reads right: quotes, lists, mappings, sweeps,
# interpolations, functions and escapes
_GRAMMAR = frozenset("'\"[]{},$()\\*?")


def _plain(key, text):
    """An override Hydra would read as the text given: a plain key and a value with none of
    Hydra's syntax (most of a command line). Importing Hydra costs each rank about 0.15 s of
    start-up, paid only when an override needs its grammar."""
    return key.replace(".", "").replace("_", "").isalnum() and (
        text is None or (text != "null" and not _GRAMMAR.intersection(text)))


def _parse_one(item):
    """(kind, key, value) of one override: Hydra's parser where its grammar takes the item,
    else the text given (a value with '=' whose quotes the shell removed)."""
    kind, key, text = _split(item)
    if _plain(key, text):
        return kind, key, None if text is None else CommandLineText(text)
    from hydra.errors import HydraException
    try:
        parsed = _hydra_parser().parse_override(item)
    except HydraException:
        parsed = None
    if parsed is not None:
        if parsed.is_sweep_override():
            raise ConfigError(f"{item!r}: a sweep (a,b or range) runs Hydra's multirun; give "
                              "one value, or a list in brackets: key=[a,b]")
        kind = KINDS[parsed.type.name]
        key = parsed.key_or_group
        value = parsed.value()
        if value is None or text is None:
            return kind, key, None
        if isinstance(value, (list, dict)):
            return kind, key, value
        if isinstance(value, str) and text[:1] in "'\"":     # quoted: the text inside
            return kind, key, CommandLineText(value)
        return kind, key, CommandLineText(text)
    if text is None:
        return kind, key, None
    return kind, key, CommandLineText(text)


def parse(items):
    """CommandLine of overrides as typed; ConfigError (one line) for one that is not an
    override."""
    out, workload, run_dir = [], None, None
    for item in items:
        item = str(item).strip()
        kind, key, value = _parse_one(item)
        if key.startswith(DLIO_PREFIX):
            key = key[len(DLIO_PREFIX):]
        if key == "workload":
            if kind == "delete" or value is None or not isinstance(value, str):
                raise ConfigError(f"{item!r}: workload=NAME names the workload file")
            workload = str(value)
            continue
        if key.startswith("hydra."):
            if key == "hydra.run.dir" and value is not None:
                run_dir = str(value)
            continue
        if key in NAMED_SECTIONS:
            key = f"{key}.name"
        if "." not in key:
            keys = [f"{s}.{k}" for s, section in SCHEMA.items() for k in section]
            raise ConfigError(f"{key!r}: overrides name a section and a key (e.g. "
                              f"dataset.num_files_train=64){closest(key, keys)}")
        section, rest = key.split(".", 1)
        if "." in rest and section in MAPPING_SECTIONS and isinstance(value, CommandLineText):
            value = command_line_yaml(key, str(value))
        out.append(Override(kind, section, rest, value, item))
    return CommandLine(tuple(out), workload, run_dir)


def _yaml_in(folder, name):
    """folder/name.yaml (or folder/name when it ends in .yaml), or None."""
    for path in (os.path.join(folder, name if name.endswith((".yaml", ".yml")) else
                              f"{name}.yaml"),):
        if os.path.isfile(path):
            return path
    return None


def dlio_workload_file(config_dir, name):
    """The workload file NAME in --config-dir (its workload/ folder, as the DLIO benchmark
    keeps them), or None to take the shipped workload of that name."""
    if not config_dir:
        return None
    if not os.path.isdir(config_dir):
        raise ConfigError(f"--config-dir {config_dir}: not a folder")
    return _yaml_in(os.path.join(config_dir, "workload"), name)


def primary_config(config_dir, config_name, read_yaml):
    """(workload name or None, workload file or None, workload document or None) of
    --config-name NAME in --config-dir: a primary config whose defaults list names a
    workload (`- workload: NAME`, as the DLIO benchmark's config.yaml does) and may hold a
    `workload:` mapping on top of it; or a workload file itself."""
    if not config_dir:
        raise ConfigError(f"--config-name {config_name}: needs --config-dir, the folder that "
                          "holds it")
    if not os.path.isdir(config_dir):
        raise ConfigError(f"--config-dir {config_dir}: not a folder")
    path = _yaml_in(config_dir, config_name)
    if path is None:
        raise ConfigError(f"--config-name {config_name}: no {config_name}.yaml in "
                          f"{config_dir}")
    doc = read_yaml(path)
    defaults = doc.get("defaults") if isinstance(doc, dict) else None
    chosen = None
    for entry in defaults if isinstance(defaults, list) else ():
        if isinstance(entry, dict) and isinstance(entry.get("workload"), str):
            chosen = entry["workload"]
    if chosen is None:
        return None, path, None
    body = doc.get("workload")
    if body is not None and not isinstance(body, dict):
        raise ConfigError(f"{path}: its workload entry must be a mapping")
    return chosen, None, body
