"""The configuration reference, generated from dlio_mpi/config/schema.py: every key of every section
with its type, default and meaning, as a Markdown page (docs/configuration.md is made from it
when the docs are built).

    python scripts/config_reference.py [OUT.md]      (stdout without OUT)
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from dlio_mpi.config.loader import DLIO_ABSENT_SECTION_DEFAULTS  # noqa: E402
from dlio_mpi.config.schema import ALIASES, FORMAT_ALIASES, SCHEMA, SECTION_ALIASES  # noqa: E402

INTRO = """\
# Configuration reference

Generated from `dlio_mpi/config/schema.py`, which the configuration loader checks every key
against. A workload is a shipped one (`workload=NAME`; `python -m dlio_mpi workloads list`),
or a YAML file (`--config FILE`, or the DLIO benchmark's `--config-dir DIR workload=NAME`),
then overrides in Hydra's grammar (`section.key=value`, `+key=value`, `++key=value`, `~key`,
with or without DLIO's `workload.` prefix; see [Running](running.md)). Sizes take `k`, `m`, `g`, `t`,
`p` suffixes (powers of 1024; `4MiB`, `1 GB` and `1e6` too); times are seconds, and
`train.computation_time` also takes a distribution (`{type: normal, mean: 0.1, stdev:
0.01}`, uniform, gamma, exponential, poisson). A key marked *not emulated* is accepted (the
DLIO benchmark's and MLPerf Storage's files use it) and listed in the summary's
`not_emulated`: it only means something to a framework. An unknown key (with the closest
valid one), a wrong type, an out-of-range value or an impossible combination is one line and
exit status 2 on every rank, before any I/O. A `--config` file that leaves a section out
gets the DLIO benchmark's defaults for it where they differ from the ones below (see
"Sections a file leaves out").
"""

TYPES = {"int": "integer", "size": "size (bytes)", "float": "number", "time": "seconds",
         "bool": "boolean", "str": "string", "list": "list", "dict": "mapping"}


def cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def default_text(key):
    value = key.default
    if isinstance(value, str):
        return f"`{value}`" if value else "(empty)"
    return f"`{json.dumps(value)}`"


def type_text(key):
    if key.type == "enum":
        return "one of " + ", ".join(f"`{c}`" for c in key.choices)
    text = TYPES.get(key.type, key.type)
    if key.minimum is not None:
        text += f", at least {key.minimum}"
    return text


def markdown():
    out = [INTRO]
    for section, keys in SCHEMA.items():
        out.append(f"## {section}\n")
        out.append("| key | type | default | meaning |")
        out.append("| --- | --- | --- | --- |")
        for name, key in keys.items():
            meaning = key.doc + ("" if key.emulated else " (*not emulated*)")
            out.append(f"| `{section}.{name}` | {cell(type_text(key))} | "
                       f"{cell(default_text(key))} | {cell(meaning)} |")
        out.append("")
    out.append("## Other spellings\n")
    out.append("Keys and format names that workload files in the wild use, read as:\n")
    out.append("| written | read as |")
    out.append("| --- | --- |")
    for (s, k), (s2, k2) in ALIASES.items():
        out.append(f"| `{s}.{k}` | `{s2}.{k2}` |")
    for name, target in SECTION_ALIASES.items():
        out.append(f"| section `{name}` | section `{target}` |")
    for name, target in FORMAT_ALIASES.items():
        out.append(f"| `dataset.format: {name}` | `{target}` |")
    out.append("\n## Sections a file leaves out\n")
    out.append("A `--config` file without one of these sections runs as the DLIO benchmark "
               "runs it, on its defaults (a shipped workload and the sections a file has keep "
               "the defaults above):\n")
    out.append("| section left out | values |")
    out.append("| --- | --- |")
    for section, values in DLIO_ABSENT_SECTION_DEFAULTS.items():
        text = ", ".join(f"`{section}.{k}={v}`" for k, v in values.items())
        out.append(f"| `{section}` | {text} |")
    return "\n".join(out) + "\n"


def main(argv):
    text = markdown()
    if len(argv) > 1:
        with open(argv[1], "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main(sys.argv)
