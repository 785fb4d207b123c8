"""Run configuration: a flat set of typed keys with defaults, `key=value` overrides, validation.

Every check happens here, on every rank, before any I/O: a bad value raises ConfigError whose
message is one line naming the key."""
from __future__ import annotations

import dataclasses
import difflib
import os
from dataclasses import dataclass, field

INTERFACES = ("posix", "posix_direct", "stdio", "mmap", "mpiio", "mpiio_coll")


class ConfigError(ValueError):
    """A configuration value that cannot be used; str() is one line."""


@dataclass(frozen=True)
class RunConfig:
    """What a run does. Sizes are bytes, times seconds."""
    data_dir: str = "./dlio_data"
    output_dir: str = "./dlio_output"
    num_files: int = 16
    samples_per_file: int = 8
    record_bytes: int = 262144
    batch_size: int = 4
    epochs: int = 2
    computation_time: float = 0.002
    interface: str = "posix"
    transfer_size: int = 0          # 0: a sample in one read
    shuffle: bool = True
    seed: int = 42
    keep_oplog: bool = False
    oplog_capacity: int = 1 << 20
    mpiio_hints: dict = field(default_factory=dict)

    @property
    def num_samples(self):
        return self.num_files * self.samples_per_file

    def to_dict(self):
        return dataclasses.asdict(self)


_FIELDS = {f.name: f for f in dataclasses.fields(RunConfig)}


def _convert(key, raw, typ):
    if not isinstance(raw, str):
        return raw
    try:
        if typ in (int, "int"):
            v = raw.lower().replace("_", "")
            mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(v[-1:], 1)
            return int(v[:-1] if mult > 1 else v) * mult
        if typ in (float, "float"):
            return float(raw)
        if typ in (bool, "bool"):
            low = raw.lower()
            if low in ("1", "true", "yes", "on"):
                return True
            if low in ("0", "false", "no", "off"):
                return False
            raise ValueError(raw)
    except ValueError:
        name = getattr(typ, "__name__", typ)
        raise ConfigError(f"{key}={raw!r}: expected {name}") from None
    return raw


def parse_overrides(items):
    """['key=value', ...] -> {key: value}; values stay strings until typed by build()."""
    out = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"{item!r}: overrides are key=value")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def build(values=None):
    """A validated RunConfig from {key: value} (strings are converted to the key's type)."""
    values = dict(values or {})
    kw = {}
    hints = {}
    for key, raw in values.items():
        if key.startswith("mpiio_hints."):
            hints[key.split(".", 1)[1]] = str(raw)
            continue
        if key not in _FIELDS or key == "mpiio_hints":
            close = difflib.get_close_matches(key, list(_FIELDS), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise ConfigError(f"unknown key {key!r}{hint}")
        typ = _FIELDS[key].type
        v = _convert(key, raw, typ)
        want = {"int": int, "float": (int, float), "bool": bool, "str": str}.get(typ, object)
        if not isinstance(v, want) or (want is int and isinstance(v, bool)):
            raise ConfigError(f"{key}={raw!r}: expected {typ}")
        kw[key] = v
    if hints:
        kw["mpiio_hints"] = hints
    cfg = RunConfig(**kw)
    validate(cfg)
    return cfg


def validate(cfg):
    for key in ("num_files", "samples_per_file", "record_bytes", "batch_size", "epochs",
                "oplog_capacity"):
        if getattr(cfg, key) < 1:
            raise ConfigError(f"{key}={getattr(cfg, key)}: must be at least 1")
    if cfg.computation_time < 0:
        raise ConfigError(f"computation_time={cfg.computation_time}: must not be negative")
    if cfg.transfer_size < 0:
        raise ConfigError(f"transfer_size={cfg.transfer_size}: must not be negative")
    if cfg.interface not in INTERFACES:
        close = difflib.get_close_matches(cfg.interface, INTERFACES, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise ConfigError(f"interface={cfg.interface!r}: one of {', '.join(INTERFACES)}{hint}")
    if os.path.realpath(cfg.data_dir) == os.path.realpath(cfg.output_dir):
        raise ConfigError("data_dir and output_dir must differ")


def check_ranks(cfg, ranks):
    """Checks that need the job's size."""
    if cfg.batch_size * ranks > cfg.num_samples:
        raise ConfigError(
            f"batch_size={cfg.batch_size} on {ranks} ranks needs at least "
            f"{cfg.batch_size * ranks} samples; the dataset has {cfg.num_samples}")
