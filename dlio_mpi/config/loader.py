"""Loading and validating a run's configuration: a shipped workload (`workload=NAME`), a YAML
file (`--config FILE`, or Hydra's --config-dir / --config-name) and overrides in Hydra's grammar
(config_hydra), merged in that order over the schema's
defaults. Every check happens here, on every rank, before any I/O: a bad value raises
ConfigError, whose message is one line naming the key."""
from __future__ import annotations

import copy
import os

from dlio_mpi import backends, formats
from dlio_mpi.config import hydra_overrides as config_hydra
from dlio_mpi.config.checks import check_names, check_ranks, validate  # noqa: F401
from dlio_mpi.config.errors import ConfigError, closest, closest_key  # noqa: F401
from dlio_mpi.config.values import (DISTRIBUTIONS, CommandLineText,  # noqa: F401
                                    command_line_yaml, parse_size, typed)
from dlio_mpi.config.bounded_yaml import read_yaml
from dlio_mpi.config.schema import ALIASES, SCHEMA, SECTION_ALIASES

WORKLOAD_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "workloads")


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


MAPPING_SECTIONS = config_hydra.MAPPING_SECTIONS


def all_keys():
    return [f"{s}.{k}" for s, keys in SCHEMA.items() for k in keys]


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
        section = SECTION_ALIASES.get(section, section)
        if section not in SCHEMA:
            raise ConfigError(f"{source}: unknown section {section!r}"
                              f"{closest(section, list(SCHEMA))}")
        for key, value in body.items():
            sec, k = ALIASES.get((section, key), (section, key))
            if k not in SCHEMA[sec]:
                raise ConfigError(f"{source}: unknown key {section}.{key}"
                                  f"{closest_key(section, key, SCHEMA)}")
            values[sec][k] = typed(f"{sec}.{k}", SCHEMA[sec][k], value)
            given.add((sec, k))


def _resolved(section, key, source):
    """The schema's (section, key) an override names (aliases followed), or ConfigError."""
    section = SECTION_ALIASES.get(section, section)
    if section not in SCHEMA:
        raise ConfigError(f"{source}: unknown section {section!r}"
                          f"{closest(section, list(SCHEMA))}")
    sec, k = ALIASES.get((section, key), (section, key))
    if k not in SCHEMA[sec]:
        raise ConfigError(f"{source}: unknown key {section}.{key}"
                          f"{closest_key(section, key, SCHEMA)}")
    return sec, k


def _default(sec, k, dlio_file):
    """A key's value once deleted: the DLIO benchmark's default where a DLIO workload file is
    loaded and it differs from the schema's, else the schema's."""
    if dlio_file and k in DLIO_ABSENT_SECTION_DEFAULTS.get(sec, {}):
        return copy.deepcopy(DLIO_ABSENT_SECTION_DEFAULTS[sec][k])
    return copy.deepcopy(SCHEMA[sec][k].default)


def _override(values, given, o, dlio_file):
    """One command-line override applied to values (given: the keys set so far)."""
    entry = None
    key = o.key
    if "." in key and o.section in MAPPING_SECTIONS:
        key, entry = key.split(".", 1)
    sec, k = _resolved(o.section, key, "override")
    name = f"{sec}.{k}" + (f".{entry}" if entry else "")
    if o.kind == "add" and (sec, k) in given:
        raise ConfigError(f"{o.text}: {name} is already in the workload (+ adds a key it "
                          f"leaves out; ++{o.name}=... sets it either way)")
    if o.kind == "delete":
        if (sec, k) not in given:
            raise ConfigError(f"{o.text}: {name} is not in the workload, nothing to delete")
        if o.has_value:
            want = typed(name, SCHEMA[sec][k], o.value) if entry is None else o.value
            have = values[sec][k] if entry is None else values[sec][k].get(entry)
            if have != want:
                raise ConfigError(f"{o.text}: {name} is {have!r}, not {want!r}; nothing deleted")
        if entry is None:
            values[sec][k] = _default(sec, k, dlio_file)
            given.discard((sec, k))
        else:
            values[sec][k] = {e: v for e, v in values[sec][k].items() if e != entry}
        return
    if o.value is None:             # null: the key's default
        values[sec][k] = _default(sec, k, dlio_file)
        given.discard((sec, k))
        return
    if entry is not None:           # a mapping entry merges into the mapping it names
        values[sec][k] = typed(name, SCHEMA[sec][k], {**values[sec][k], entry: o.value})
    elif SCHEMA[sec][k].type == "dict":
        value = typed(name, SCHEMA[sec][k], o.value)
        values[sec][k] = {**values[sec][k], **value}
    else:
        values[sec][k] = typed(name, SCHEMA[sec][k], o.value)
    given.add((sec, k))


def workload_path(name):
    path = os.path.join(WORKLOAD_DIR, f"{name}.yaml")
    if not os.path.exists(path):
        names = list_workloads()
        raise ConfigError(f"unknown workload {name!r}{closest(name, names)}; "
                          f"shipped: {', '.join(names)}")
    return path


def list_workloads():
    return sorted(f[:-5] for f in os.listdir(WORKLOAD_DIR) if f.endswith(".yaml"))


# What the DLIO benchmark takes for a section its workload file leaves out, where its defaults
# differ from this schema's (its ConfigArguments): a file written for it, such as llama_1t's
# with training on and no dataset section, runs on the dataset it would run on there.
DLIO_ABSENT_SECTION_DEFAULTS = {
    "dataset": {"num_files_train": 8, "format": "tfrecord"},
    "reader": {"data_loader": "tensorflow"},
}


def _dlio_absent_section_defaults(values, doc):
    """The DLIO benchmark's defaults of the sections a workload file (doc) leaves out."""
    for section, defaults in DLIO_ABSENT_SECTION_DEFAULTS.items():
        if section not in doc:
            values[section].update(defaults)


TF_SHUFFLE_SIZE = 1024     # the DLIO benchmark's default reader.shuffle_size


def _tensorflow_reader(values, given):
    """The DLIO benchmark's TensorFlow reader where a file or override asks for it
    (reader.data_loader=tensorflow, TFRecord files) and names no access pattern: TFRecordDataset
    over each rank's own files, read_threads of them at once (num_parallel_reads), in
    reader.transfer_size reads and one more at each file's end, samples through a shuffle
    buffer of its default size when they are shuffled. Keys given keep their values. Returns
    whether it applied."""
    rd, ds, io = values["reader"], values["dataset"], values["io"]
    if (rd["data_loader"] != "tensorflow" or ds["format"] not in formats.TRAITS
            or not formats.traits(ds["format"]).records
            or ("reader", "access") in given or io["layout"] != "multi"
            or io["read_type"] != "on_demand"
            or io["interface"] not in backends.BACKENDS
            or not backends.get(io["interface"]).streams):
        return False
    rd["access"] = "stream"
    for key, value in (("interleave", max(1, rd["read_threads"])), ("eof_reads", 1),
                       ("shuffle_size", TF_SHUFFLE_SIZE if rd["sample_shuffle"] != "off"
                        else rd["shuffle_size"])):
        if ("reader", key) not in given:
            rd[key] = value
    return True


def _datasets_per_record(values, given):
    """The DLIO benchmark's HDF5 records split into N datasets (dataset.hdf5's
    num_dset_per_record, or dataset.num_dataset_per_record), each sample read from every one
    of them: emulated as the sample's row and N - 1 fields (dataset.hdf5_fields records_1 ..
    records_<N-1>) of a record's N-th part each, unless fields are given. Returns the keys it
    emulated."""
    ds = values["dataset"]
    nested = ds.get("hdf5") if isinstance(ds.get("hdf5"), dict) else {}
    n = nested.get("num_dset_per_record", ds.get("num_dataset_per_record", 1))
    if ds["format"] not in formats.TRAITS or not formats.traits(ds["format"]).rows \
            or isinstance(n, bool) or not isinstance(n, int) or n < 2 \
            or ds["hdf5_fields"] or ds["volume_shape"]:
        return set()
    part = ds["record_length"] // n
    if part < 1:
        return set()
    ds["hdf5_fields"] = [{"name": f"records_{i}", "bytes": part} for i in range(1, n)]
    return {("dataset", "hdf5"), ("dataset", "num_dataset_per_record")} \
        if set(nested) <= {"num_dset_per_record"} else {("dataset", "num_dataset_per_record")}


def load(overrides=(), config_file=None, workload=None, doc=None, doc_source="workload",
         config_dir=None, config_name=None):
    """The validated Config of a run: the workload, then ``config_file``, then ``doc`` (a
    workload document: section -> key -> value, named ``doc_source`` in errors), then the
    overrides (Hydra's grammar: config_hydra), in order. ``config_dir`` and ``config_name``
    are Hydra's --config-dir and --config-name, as the DLIO benchmark takes them."""
    command_line = config_hydra.parse(overrides)
    workload = command_line.workload or workload
    primary_doc = None
    workload_name = workload
    if config_name:
        if config_file:
            raise ConfigError(f"--config {config_file} and --config-name {config_name}: "
                              "give one")
        chosen, config_file, primary_doc = config_hydra.primary_config(config_dir, config_name,
                                                                       read_yaml)
        workload = workload_name = command_line.workload or chosen
    if workload and config_dir:
        found = config_hydra.dlio_workload_file(config_dir, workload)
        if found and config_file:
            raise ConfigError(f"--config {config_file} and workload {workload} of --config-dir "
                              f"{config_dir}: give one")
        if found:
            config_file, workload = found, None
    values = {s: {k: copy.deepcopy(key.default) for k, key in keys.items()}
              for s, keys in SCHEMA.items()}
    given = set()
    if workload:
        _apply(values, _normalize(read_yaml(workload_path(workload)), f"workload {workload}"),
               f"workload {workload}", given)
    if config_file:
        file_doc = _normalize(read_yaml(config_file), config_file)
        file_doc = {SECTION_ALIASES.get(k, k): v for k, v in file_doc.items()}
        _dlio_absent_section_defaults(values, file_doc)
        _apply(values, file_doc, config_file, given)
    if primary_doc is not None:
        source = f"--config-name {config_name}"
        _apply(values, _normalize(copy.deepcopy(primary_doc), source), source, given)
    if doc is not None:
        _apply(values, _normalize(copy.deepcopy(doc), doc_source), doc_source, given)
    if command_line.run_dir is not None and not any(
            o.section == "output" and o.key == "folder" for o in command_line.overrides):
        values["output"]["folder"] = command_line.run_dir
    for override in command_line.overrides:
        _override(values, given, override, bool(config_file))
    if values["checkpoint"]["model_size"] and not values["model"]["model_size_bytes"]:
        values["model"]["model_size_bytes"] = values["checkpoint"]["model_size"]
    if values["reader"]["odirect"] and values["io"]["interface"] == "posix":
        values["io"]["interface"] = "posix_direct"      # reader.odirect: the same, by name
    if formats.traits(values["dataset"]["format"]).mapped and ("io", "interface") not in given:
        values["io"]["interface"] = "mmap"     # the format's application maps its files
    own_access = formats.traits(values["dataset"]["format"]).access
    if own_access and ("reader", "access") not in given:
        values["reader"]["access"] = own_access     # read as the format's library reads it
    tf_reader = _tensorflow_reader(values, given)
    split = _datasets_per_record(values, given)
    not_emulated = sorted(f"{s}.{k}" for s, k in given if not SCHEMA[s][k].emulated
                          and not (tf_reader and (s, k) == ("reader", "data_loader"))
                          and not (split and (s, k) in split))
    cfg = Config(values, not_emulated, workload_name)
    validate(cfg)
    return cfg
