"""Loading and validating a run's configuration: a shipped workload (`workload=NAME`), a YAML
file (`--config FILE`) and `section.key=value` overrides, merged in that order over the schema's
defaults. Every check happens here, on every rank, before any I/O: a bad value raises
ConfigError, whose message is one line naming the key."""
from __future__ import annotations

import copy
import difflib
import os
import re

import yaml

from dlio_mpi.config_checks import check_names, check_ranks, validate  # noqa: F401
from dlio_mpi.config_error import ConfigError  # noqa: F401 - re-exported
from dlio_mpi.schema import ALIASES, FORMAT_ALIASES, SCHEMA

WORKLOAD_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workloads")
DISTRIBUTIONS = {"normal": ("mean", "stdev"), "uniform": ("min", "max"),
                 "gamma": ("shape", "scale"), "exponential": ("scale",), "poisson": ("lam",)}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtp]?)(i?b?)\s*$", re.I)




class Section:
    """Read-only attribute access to one section's values."""

    def __init__(self, name, values):
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_values", dict(values))

    def __getattr__(self, key):
        try:
            return self._values[key]
        except KeyError:
            raise AttributeError(f"{self._name}.{key}") from None

    def __setattr__(self, key, value):
        raise AttributeError("configuration is read-only")

    def to_dict(self):
        return copy.deepcopy(self._values)


class Config:
    """A validated configuration: cfg.dataset.num_files_train, cfg.io.interface, ..."""

    def __init__(self, values, not_emulated, workload):
        for name, sec in values.items():
            object.__setattr__(self, name, Section(name, sec))
        object.__setattr__(self, "not_emulated", tuple(not_emulated))
        object.__setattr__(self, "workload", workload)

    def __setattr__(self, key, value):
        raise AttributeError("configuration is read-only")

    def to_dict(self):
        return {name: getattr(self, name).to_dict() for name in SCHEMA}

    @property
    def num_samples(self):
        return self.dataset.num_files_train * self.dataset.num_samples_per_file


def all_keys():
    return [f"{s}.{k}" for s, keys in SCHEMA.items() for k in keys]


def _closest(word, options):
    m = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return f" (did you mean {m[0]}?)" if m else ""


def parse_size(text):
    """'4k', '1MiB', '2.5G', '512' -> bytes (k, m, g, t, p are powers of 1024)."""
    if isinstance(text, bool):
        raise ValueError(text)
    if isinstance(text, int):
        return text
    if isinstance(text, float) and text.is_integer():
        return int(text)
    m = _SIZE.match(str(text).replace("_", ""))
    if not m:
        raise ValueError(text)
    mult = 1024 ** " kmgtp".index(m.group(2).lower() or " ")
    value = float(m.group(1)) * mult
    if not value.is_integer():
        raise ValueError(text)
    return int(value)


class RawText(str):
    """A command-line value, typed by the key it is given to."""


def _from_text(text):
    """A command-line value as YAML would read it (numbers, booleans, lists, dicts)."""
    try:
        return yaml.safe_load(text) if text != "" else ""
    except yaml.YAMLError:
        return text


# sizes that are a distribution's mean or spread: a fractional number of bytes is rounded
MEAN_SIZES = ("dataset.record_length", "dataset.record_length_stdev")


def _typed(where, key, value):
    """value checked (and converted) against the schema's Key, or ConfigError."""
    t = key.type
    if isinstance(value, RawText):
        value = _from_text(value) if t in ("list", "dict", "time") else str(value)
    if t == "enum" and isinstance(value, bool) and "off" in key.choices and not value:
        value = "off"           # YAML 1.1 reads an unquoted off as false
    try:
        if t == "int":
            if isinstance(value, bool) or not isinstance(value, int):
                value = int(str(value), 0) if isinstance(value, str) else None
                if value is None:
                    raise ValueError
        elif t == "size":
            if where in MEAN_SIZES and isinstance(value, float) and value >= 0:
                value = round(value)    # a mean, as MLPerf's 114660.07: whole bytes
            value = parse_size(value)
        elif t == "float":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                value = float(value)
            value = float(value)
        elif t == "bool":
            if not isinstance(value, bool):
                low = str(value).lower()
                if low not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
                    raise ValueError
                value = low in ("true", "1", "yes", "on")
        elif t == "str":
            value = str(value)
        elif t == "enum":
            value = str(value)
            if where == "dataset.format":
                value = FORMAT_ALIASES.get(value, value)
            if value not in key.choices:
                raise ConfigError(f"{where}={value!r}: one of {', '.join(key.choices)}"
                                  f"{_closest(value, key.choices)}")
        elif t == "list":
            if not isinstance(value, list):
                raise ValueError
        elif t == "dict":
            if not isinstance(value, dict):
                raise ValueError
        elif t == "time":
            value = _time(where, value)
    except ConfigError:
        raise
    except (ValueError, TypeError):
        raise ConfigError(f"{where}={value!r}: expected {_type_name(t)}") from None
    if key.minimum is not None and isinstance(value, (int, float)) and value < key.minimum:
        raise ConfigError(f"{where}={value!r}: must be at least {key.minimum}")
    return value


def _type_name(t):
    return {"size": "a size in bytes (e.g. 4096, 256k, 1m)", "int": "an integer",
            "float": "a number", "bool": "true or false", "list": "a list",
            "dict": "a mapping", "time": "seconds or a distribution"}.get(t, t)


def _time(where, value):
    """Seconds, or a distribution {type: normal|uniform|gamma|exponential|poisson, ...}."""
    if isinstance(value, bool):
        raise ValueError
    if isinstance(value, (int, float)):
        if value < 0:
            raise ConfigError(f"{where}={value}: must not be negative")
        return float(value)
    if isinstance(value, str):
        return _time(where, _from_text(value) if not re.match(r"^[\d.]+$", value)
                     else float(value))
    if not isinstance(value, dict):
        raise ValueError
    kind = value.get("type", "normal")
    if kind not in DISTRIBUTIONS:
        raise ConfigError(f"{where}.type={kind!r}: one of {', '.join(DISTRIBUTIONS)}")
    need = DISTRIBUTIONS[kind]
    extra = set(value) - set(need) - {"type"}
    if extra:
        raise ConfigError(f"{where}: unknown parameter {sorted(extra)[0]!r} of a {kind} "
                          f"distribution (takes {', '.join(need)})")
    out = {"type": kind}
    for p in need:
        if p not in value:
            if kind == "normal" and p == "stdev":
                out[p] = 0.0
                continue
            raise ConfigError(f"{where}: a {kind} distribution needs {p}")
        v = value[p]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise ConfigError(f"{where}.{p}={v!r}: expected a non-negative number")
        out[p] = float(v)
    if kind == "uniform" and out["min"] > out["max"]:
        raise ConfigError(f"{where}: uniform min {out['min']} is above max {out['max']}")
    return out


def _normalize(doc, source):
    """A workload document as section -> {key: value}: DLIO's shorthand forms unfolded
    (model: NAME, framework: NAME), a leading `workload:` level dropped."""
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        kind = {list: "a list", str: "a string"}.get(type(doc), f"a {type(doc).__name__} value")
        raise ConfigError(f"{source}: holds {kind}; a workload file is a mapping of sections")
    if set(doc) == {"workload"} and isinstance(doc["workload"], dict):
        doc = doc["workload"]
    out = {}
    for section, body in doc.items():
        if section in ("model", "framework") and isinstance(body, str):
            body = {"name": body}
        if section == "hydra" or section == "defaults":
            continue
        if not isinstance(body, dict):
            raise ConfigError(f"{source}: section {section!r} must be a mapping")
        out[section] = body
    return out


def _apply(values, doc, source, given):
    for section, body in doc.items():
        if section not in SCHEMA:
            raise ConfigError(f"{source}: unknown section {section!r}"
                              f"{_closest(section, list(SCHEMA))}")
        for key, value in body.items():
            sec, k = ALIASES.get((section, key), (section, key))
            if k not in SCHEMA[sec]:
                raise ConfigError(f"{source}: unknown key {section}.{key}"
                                  f"{_closest(f'{section}.{key}', all_keys())}")
            values[sec][k] = _typed(f"{sec}.{k}", SCHEMA[sec][k], value)
            given.add((sec, k))


def workload_path(name):
    path = os.path.join(WORKLOAD_DIR, f"{name}.yaml")
    if not os.path.exists(path):
        names = list_workloads()
        raise ConfigError(f"unknown workload {name!r}{_closest(name, names)}; "
                          f"shipped: {', '.join(names)}")
    return path


def list_workloads():
    return sorted(f[:-5] for f in os.listdir(WORKLOAD_DIR) if f.endswith(".yaml"))


def read_yaml(path):
    """The document of a YAML file; a file that is unreadable, not UTF-8 text or not YAML is
    a ConfigError naming the file and, where known, the line."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise ConfigError(f"{path} line {line}: not UTF-8 text (byte 0x{data[e.start]:02x}); "
                          f"a workload file is YAML") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        if mark is not None:
            where = f" line {mark.line + 1}"
        elif isinstance(getattr(e, "position", None), int):
            where = f" line {text[:e.position].count(chr(10)) + 1}"
        else:
            where = ""
        problem = getattr(e, "problem", None) or getattr(e, "reason", None)
        why = f" ({' '.join(str(problem).split())})" if problem else ""
        raise ConfigError(f"{path}{where}: not valid YAML{why}") from None


def parse_overrides(items):
    """['section.key=value', ...] -> {section: {key: value}}. Hydra's '++' / '+' prefixes and
    a leading 'workload.' are accepted; `workload=NAME` is returned separately."""
    doc, workload = {}, None
    for item in items:
        if "=" not in item:
            raise ConfigError(f"{item!r}: overrides are section.key=value")
        k, v = item.split("=", 1)
        k = k.strip().lstrip("+")
        if k.startswith("workload."):
            k = k[len("workload."):]
        if k == "workload":
            workload = v.strip()
            continue
        if "." not in k:
            raise ConfigError(f"{k!r}: overrides name a section and a key (e.g. "
                              f"dataset.num_files_train=64){_closest(k, all_keys())}")
        section, key = k.split(".", 1)
        if "." in key and section in ("io", "model", "output"):
            # a mapping entry: io.mpiio_hints.cb_nodes=4
            top, sub = key.split(".", 1)
            doc.setdefault(section, {}).setdefault(top, {})[sub] = _from_text(v.strip())
            continue
        doc.setdefault(section, {})[key] = RawText(v.strip())
    return doc, workload


TF_SHUFFLE_SIZE = 1024     # the DLIO benchmark's default reader.shuffle_size


def _tensorflow_reader(values, given):
    """The DLIO benchmark's TensorFlow reader where a file or override asks for it
    (reader.data_loader=tensorflow, TFRecord files) and names no access pattern: TFRecordDataset
    over each rank's own files, read_threads of them at once (num_parallel_reads), in
    reader.transfer_size reads and one more at each file's end, samples through a shuffle
    buffer of its default size when they are shuffled. Keys given keep their values. Returns
    whether it applied."""
    rd, ds, io = values["reader"], values["dataset"], values["io"]
    if (rd["data_loader"] != "tensorflow" or ds["format"] != "tfrecord"
            or ("reader", "access") in given or io["layout"] != "multi"
            or io["read_type"] != "on_demand"
            or io["interface"] not in ("posix", "posix_direct", "stdio", "mmap", "mpiio")):
        return False
    rd["access"] = "stream"
    for key, value in (("interleave", max(1, rd["read_threads"])), ("eof_reads", 1),
                       ("shuffle_size", TF_SHUFFLE_SIZE if rd["sample_shuffle"] != "off"
                        else rd["shuffle_size"])):
        if ("reader", key) not in given:
            rd[key] = value
    return True


def load(overrides=(), config_file=None, workload=None, doc=None, doc_source="workload"):
    """The validated Config of a run: the workload, then ``config_file``, then ``doc`` (a
    workload document: section -> key -> value, named ``doc_source`` in errors), then the
    overrides."""
    overrides_doc, wl = parse_overrides(overrides)
    workload = wl or workload
    values = {s: {k: copy.deepcopy(key.default) for k, key in keys.items()}
              for s, keys in SCHEMA.items()}
    given = set()
    if workload:
        _apply(values, _normalize(read_yaml(workload_path(workload)), f"workload {workload}"),
               f"workload {workload}", given)
    if config_file:
        _apply(values, _normalize(read_yaml(config_file), config_file), config_file, given)
    if doc is not None:
        _apply(values, _normalize(copy.deepcopy(doc), doc_source), doc_source, given)
    for section, body in overrides_doc.items():
        # a mapping override merges into the mapping it names
        for key, value in list(body.items()):
            if (section in SCHEMA and key in SCHEMA[section]
                    and SCHEMA[section][key].type == "dict" and isinstance(value, dict)):
                body[key] = {**values[section][key], **value}
    _apply(values, overrides_doc, "override", given)
    if values["checkpoint"]["model_size"] and not values["model"]["model_size_bytes"]:
        values["model"]["model_size_bytes"] = values["checkpoint"]["model_size"]
    if values["reader"]["odirect"] and values["io"]["interface"] == "posix":
        values["io"]["interface"] = "posix_direct"
    tf_reader = _tensorflow_reader(values, given)
    not_emulated = sorted(f"{s}.{k}" for s, k in given if not SCHEMA[s][k].emulated
                          and not (tf_reader and (s, k) == ("reader", "data_loader")))
    cfg = Config(values, not_emulated, workload)
    validate(cfg)
    return cfg
