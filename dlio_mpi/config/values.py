"""Configuration values typed by the schema: a value from a workload file, a run's summary or a
command-line override becomes the type its Key names (int, size, float, time, bool, str,
enum, list, dict) here, or a ConfigError of one line naming the key.

A number reads the same whatever its source: YAML 1.1 (PyYAML) leaves a float without a dot
(1e-3, 5E+2) as text, read here as the number it is; NaN and infinities are refused wherever
a number is expected, as no key means anything by them; integers and sizes fit a signed
64-bit integer, as the C engines and numpy take them."""
import math
import numbers
import re
from decimal import Decimal

import yaml

from dlio_mpi.config.errors import ConfigError, closest
from dlio_mpi.config.bounded_yaml import BoundExceeded, load_text
from dlio_mpi.config.schema import FORMAT_ALIASES

INT_MIN, INT_MAX = -(1 << 63), (1 << 63) - 1
DISTRIBUTIONS = {"normal": ("mean", "stdev"), "uniform": ("min", "max"),
                 "gamma": ("shape", "scale"), "exponential": ("scale",), "poisson": ("lam",)}

# YAML 1.1's and 1.2's decimal forms: 12, -1.5, .5, 1., 1_000, 1e-3, 2.5E+4
_DECIMAL = re.compile(r"[-+]?(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][-+]?\d+)?")
# NaN and infinities as Python and YAML spell them
_NON_FINITE = re.compile(r"[-+]?\.?(?:nan|inf|infinity)", re.I)
# a size: a number and a unit (k, m, g, t, p: powers of 1024; KiB, kb, k alike; b: bytes)
_SIZE = re.compile(r"([-+]?[\d_.]+(?:[eE][-+]?\d+)?)\s*(?:([kmgtp])i?b?|b)?", re.I)


class CommandLineText(str):
    """A value as given on the command line (section.key=value), typed by the key it is
    given to: text for strings, sizes, numbers and booleans, YAML for lists, mappings and
    times (a distribution is a mapping)."""


class Refused(ValueError):
    """A value of the right kind that no key takes; str() says why."""


def number_text(text):
    """A number written as text (YAML's decimal forms, 1e-3 included) -> int or float;
    Refused for NaN, infinities and a float beyond them, ValueError for anything else."""
    text = text.strip()
    if _NON_FINITE.fullmatch(text):
        raise Refused("not a finite number")
    if not _DECIMAL.fullmatch(text):
        raise ValueError(text)
    text = text.replace("_", "")
    if re.fullmatch(r"[-+]?\d+", text):
        return int(text)
    value = float(text)
    if not math.isfinite(value):
        raise Refused("not a finite number")
    return value


def finite_number(value):
    """A finite float from a YAML number, a number's text or a JSON number."""
    if isinstance(value, bool):
        raise ValueError(value)
    if isinstance(value, str):
        value = number_text(value)
    if not isinstance(value, numbers.Real):       # numpy's scalars are Real too
        raise ValueError(value)
    try:
        value = float(value)
    except OverflowError:           # an integer beyond the largest float
        raise Refused("not a finite number") from None
    if not math.isfinite(value):
        raise Refused("not a finite number")
    return value


def _in_range(n):
    if not INT_MIN <= n <= INT_MAX:
        raise Refused(f"must be at most {INT_MAX}" if n > 0 else f"must be at least {INT_MIN}")
    return n


def integer(value):
    """An integer from a YAML integer or an integer's text (Python's forms: 12, 0x1f,
    1_000), within a signed 64-bit integer."""
    if isinstance(value, bool):
        raise ValueError(value)
    if isinstance(value, str):
        text = value.strip()
        if _NON_FINITE.fullmatch(text):
            raise Refused("not a finite number")
        value = int(text, 0)
    elif isinstance(value, float) and not math.isfinite(value):
        raise Refused("not a finite number")
    if not isinstance(value, numbers.Integral):   # numpy's integers are Integral too
        raise ValueError(value)
    return _in_range(int(value))


def parse_size(text):
    """'4k', '1MiB', '1 GB', '2.5G', '1e6', '512' -> bytes (k, m, g, t, p are powers of
    1024); a whole number of bytes within a signed 64-bit integer, else ValueError."""
    if isinstance(text, bool):
        raise ValueError(text)
    if isinstance(text, numbers.Integral):
        return _in_range(int(text))
    if isinstance(text, numbers.Real):
        text = float(text)
        if not math.isfinite(text):
            raise Refused("not a finite number")
        if not text.is_integer():
            raise ValueError(text)
        return _in_range(int(text))
    if not isinstance(text, str):
        raise ValueError(text)
    if _NON_FINITE.fullmatch(text.strip()):
        raise Refused("not a finite number")
    m = _SIZE.fullmatch(text.strip())
    if not m or not _DECIMAL.fullmatch(m.group(1)):
        raise ValueError(text)
    # exact decimal arithmetic: 9007199254740993 bytes stays that many
    number = Decimal(m.group(1).replace("_", ""))
    if number and number.adjusted() < -30:
        raise ValueError(text)          # far below a byte, whatever the unit
    _in_range(number)                   # before any arithmetic on 1e999999999
    value = number * 1024 ** " kmgtp".index((m.group(2) or " ").lower())
    if value != value.to_integral_value():
        raise ValueError(text)
    return int(_in_range(value))


def boolean(value):
    if isinstance(value, bool):
        return value
    low = str(value).lower()
    if low not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
        raise ValueError(value)
    return low in ("true", "1", "yes", "on")


def command_line_yaml(where, text):
    """A command-line value read as YAML would read it in a file (numbers, booleans, lists,
    mappings); text that is not YAML stays text. The YAML reading's bounds hold."""
    if text == "":
        return ""
    try:
        return load_text(text)
    except BoundExceeded as e:
        raise ConfigError(f"{where}: refused: {e.problem}") from None
    except (yaml.YAMLError, ValueError):
        return str(text)


def duration(where, value):
    """Seconds (a non-negative finite number), or a distribution {type: normal | uniform |
    gamma | exponential | poisson, its parameters}, as a dict with float parameters."""
    if isinstance(value, CommandLineText):
        value = command_line_yaml(where, value)
    if isinstance(value, bool):
        raise ValueError(value)
    if isinstance(value, (int, float, str)):
        seconds = finite_number(value)
        if seconds < 0:
            raise ConfigError(f"{where}={value!r}: must not be negative")
        return seconds
    if not isinstance(value, dict):
        raise ValueError(value)
    kind = value.get("type", "normal")
    if not isinstance(kind, str) or kind not in DISTRIBUTIONS:
        raise ConfigError(f"{where}.type={kind!r}: one of {', '.join(DISTRIBUTIONS)}")
    need = DISTRIBUTIONS[kind]
    extra = set(value) - set(need) - {"type"}
    if extra:
        raise ConfigError(f"{where}: unknown parameter {sorted(map(str, extra))[0]!r} of a "
                          f"{kind} distribution (takes {', '.join(need)})")
    out = {"type": kind}
    for p in need:
        if p not in value:
            if kind == "normal" and p == "stdev":
                out[p] = 0.0
                continue
            raise ConfigError(f"{where}: a {kind} distribution needs {p}")
        v = value[p]
        try:
            out[p] = finite_number(v)
        except Refused as e:
            raise ConfigError(f"{where}.{p}={v!r}: {e}") from None
        except ValueError:
            out[p] = -1.0
        if out[p] < 0:
            raise ConfigError(f"{where}.{p}={v!r}: expected a non-negative number")
    if kind == "uniform" and out["min"] > out["max"]:
        raise ConfigError(f"{where}: uniform min {out['min']} is above max {out['max']}")
    return out


def type_name(t):
    return {"size": "a size in bytes (e.g. 4096, 256k, 1m)", "int": "an integer",
            "float": "a number", "bool": "true or false", "list": "a list",
            "dict": "a mapping", "time": "seconds or a distribution"}.get(t, t)


def typed(where, key, value):
    """value checked against the schema's Key (and converted to its type), or ConfigError
    naming ``where`` (section.key)."""
    t, given = key.type, value
    if isinstance(value, CommandLineText) and t in ("list", "dict"):
        value = command_line_yaml(where, value)
    elif isinstance(value, CommandLineText) and t != "time":
        value = str(value)
    if t == "enum" and isinstance(value, bool) and "off" in key.choices and not value:
        value = "off"           # YAML 1.1 reads an unquoted off as false
    try:
        if t == "int":
            value = integer(value)
        elif t == "size":
            if key.rounded and isinstance(value, float) and math.isfinite(value) and value >= 0:
                value = round(value)    # a mean, as MLPerf's 114660.07: whole bytes
            value = parse_size(value)
        elif t == "float":
            value = finite_number(value)
        elif t == "bool":
            value = boolean(value)
        elif t == "str":
            value = str(value)
        elif t == "enum":
            value = str(value)
            if where == "dataset.format":
                value = FORMAT_ALIASES.get(value, value)
            if value not in key.choices:
                raise ConfigError(f"{where}={value!r}: one of {', '.join(key.choices)}"
                                  f"{closest(value, key.choices)}")
        elif t == "list":
            if not isinstance(value, list):
                raise ValueError(value)
        elif t == "dict":
            if not isinstance(value, dict):
                raise ValueError(value)
        elif t == "time":
            value = duration(where, value)
    except ConfigError:
        raise
    except Refused as e:
        raise ConfigError(f"{where}={_shown(given)}: {e}") from None
    except (ValueError, TypeError):
        raise ConfigError(f"{where}={_shown(given)}: expected {type_name(t)}") from None
    if key.minimum is not None and isinstance(value, (int, float)) and value < key.minimum:
        raise ConfigError(f"{where}={value!r}: must be at least {key.minimum}")
    return value


def _shown(value):
    """A value as an error line shows it: a command-line text as given, quoted."""
    if isinstance(value, CommandLineText):
        return repr(str(value))
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
