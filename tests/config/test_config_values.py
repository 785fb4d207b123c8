"""Configuration values read by one typed layer, whatever their source (a workload file, a
--config file, a command-line override): YAML 1.1's floats without a dot (1e-3), NaN and
infinities refused for every numeric key of the schema, integers and sizes within 64 bits,
anchors and aliases bounded while the YAML is read, and the number options of the command
line checked the same way. Bad input is one line naming the key (or the file), exit 2."""
import math
import resource
import subprocess
import sys
import time
import tracemalloc

import click
import pytest

from dlio_mpi.config import loader as config
from dlio_mpi.config.schema import SCHEMA

TIME_KEYS = ["train.computation_time", "evaluation.eval_time", "reader.preprocess_time"]
NUMERIC_KEYS = [f"{s}.{k}" for s, keys in SCHEMA.items() for k, key in keys.items()
                if key.type in ("int", "float", "size", "time")]


def dlio(tmp_path, *args, timeout=60, limit_bytes=None):
    """python -m dlio_mpi ARGS in tmp_path (address space limited to limit_bytes, if given)."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    return subprocess.run([sys.executable, "-m", "dlio_mpi", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, cwd=tmp_path,
                          preexec_fn=limit if limit_bytes else None)


def assert_config_error(p, *words):
    """Exit 2 and one line on stderr, a config error holding every word; nothing on stdout."""
    assert p.returncode == 2, p.stdout[-2000:] + p.stderr[-2000:]
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("dlio_mpi: config error: "), p.stderr[-2000:]
    for word in words:
        assert word in lines[0], lines[0]
    assert p.stdout == ""


def load_error(*overrides, config_file=None):
    """The one line of the ConfigError that loading raises."""
    with pytest.raises(config.ConfigError) as ei:
        config.load(["workload=default", *overrides], config_file=config_file)
    text = str(ei.value)
    assert "\n" not in text
    return text


def yaml_file(tmp_path, key, text):
    section, name = key.split(".")
    f = tmp_path / "w.yaml"
    f.write_text(f"{section}:\n  {name}: {text}\n")
    return str(f)


# F1: a float without a dot, which YAML 1.1 leaves as text

@pytest.mark.parametrize("key", TIME_KEYS)
@pytest.mark.parametrize("text,seconds", [("1e-3", 0.001), ("5E+2", 500.0), ("2e0", 2.0),
                                          ("1_000", 1000.0), (".5", 0.5)])
def test_a_time_in_exponent_form_is_a_number(tmp_path, key, text, seconds):
    section, name = key.split(".")
    cfg = config.load(["workload=default", f"{key}={text}"])
    assert getattr(getattr(cfg, section), name) == seconds
    cfg = config.load(config_file=yaml_file(tmp_path, key, text))
    assert getattr(getattr(cfg, section), name) == seconds


@pytest.mark.parametrize("text,size", [("4MiB", 4 << 20), ("1 GB", 1 << 30), ("1e6", 10 ** 6),
                                       ("1.5k", 1536), ("2.5E3", 2500), ("1_024 kib", 1 << 20),
                                       ("9007199254740993", 9007199254740993)])
def test_size_forms(text, size):
    assert config.parse_size(text) == size


@pytest.mark.parametrize("text", ["1e999999999", "-1e999999999", "1e-99999999999", "1e-30p",
                                  "nan", "inf", "4 lb", "1..5k"])
def test_sizes_out_of_reach_are_refused_at_once(text):
    started = time.monotonic()
    with pytest.raises(ValueError):
        config.parse_size(text)
    assert time.monotonic() - started < 1


def test_numbers_in_exponent_form_for_every_kind_of_key(tmp_path):
    f = tmp_path / "w.yaml"
    f.write_text("metric:\n  au: 9e-1\ndataset:\n  record_length: 1e6\n"
                 "train:\n  computation_time: {type: normal, mean: 1e-3, stdev: 1e-4}\n")
    cfg = config.load(config_file=str(f))
    assert cfg.metric.au == 0.9 and cfg.dataset.record_length == 10 ** 6
    assert cfg.train.computation_time == {"type": "normal", "mean": 1e-3, "stdev": 1e-4}
    cfg = config.load(["workload=default", "metric.au=9e-1", "reader.transfer_size=4e3k"])
    assert cfg.metric.au == 0.9 and cfg.reader.transfer_size == 4000 * 1024


@pytest.mark.parametrize("key", TIME_KEYS)
# a list on the command line is a list (Hydra's grammar), shown as one
@pytest.mark.parametrize("text,quoted", [("abc", "'abc'"), ("", "''"), ("1e-3s", "'1e-3s'"),
                                         ("[1, 2]", "[1, 2]")])
def test_a_time_that_is_no_number_is_one_line(tmp_path, key, text, quoted):
    assert load_error(f"{key}={text}") == \
        f"{key}={quoted}: expected seconds or a distribution"
    line = load_error(config_file=yaml_file(tmp_path, key, repr(text)))
    assert line.startswith(f"{key}=") and "expected seconds or a distribution" in line


@pytest.mark.parametrize("how", ["override", "file"])
@pytest.mark.parametrize("text", ["1e-3x", "abc", "''"])
def test_a_bad_time_from_the_command_line_is_exit_2_before_any_io(tmp_path, how, text):
    data = tmp_path / "data"
    if how == "override":
        args = ["generate", "workload=default", f"dataset.data_folder={data}",
                f"train.computation_time={text}"]
    else:
        args = ["generate", "--config", yaml_file(tmp_path, "train.computation_time", text),
                f"dataset.data_folder={data}"]
    p = dlio(tmp_path, *args)
    assert_config_error(p, "train.computation_time=", "expected seconds or a distribution")
    assert not data.exists()


# F2: NaN and infinities, for every numeric key of the schema

NON_FINITE_TEXT = ["nan", "NaN", "inf", "-inf", "+inf", "Infinity", ".nan", ".inf", "-.inf"]
NON_FINITE_YAML = [".nan", ".NaN", ".inf", "-.inf", "+.Inf", "1.0e+400", "-1.0e+400"]


def _refused(line, key):
    return line.startswith(f"{key}=") and ("finite" in line or "expected" in line)


@pytest.mark.parametrize("key", NUMERIC_KEYS)
def test_nan_and_infinities_are_refused_for_every_numeric_key(tmp_path, key):
    for text in NON_FINITE_TEXT:
        line = load_error(f"{key}={text}")
        assert _refused(line, key), (text, line)
    for text in NON_FINITE_YAML:
        line = load_error(config_file=yaml_file(tmp_path, key, text))
        assert _refused(line, key), (text, line)
    if SCHEMA[key.split(".")[0]][key.split(".")[1]].type == "time":
        for text in NON_FINITE_YAML:
            for spec in (f"{{type: normal, mean: {text}}}", f"{{type: uniform, min: 0, "
                         f"max: {text}}}", f"{{type: poisson, lam: {text}}}"):
                line = load_error(f"{key}={spec}")
                assert line.startswith(f"{key}.") and "finite" in line, (spec, line)


@pytest.mark.parametrize("key", [k for k in NUMERIC_KEYS
                                 if SCHEMA[k.split(".")[0]][k.split(".")[1]].type
                                 in ("int", "size")])
def test_integers_and_sizes_beyond_64_bits_or_fractional_are_refused(tmp_path, key):
    section, name = key.split(".")
    is_int = SCHEMA[section][name].type == "int"
    for text in ["1e400", str(10 ** 400), str(1 << 63), str(-(1 << 63) - 1), "1.5", "0.25"]:
        line = load_error(f"{key}={text}")
        assert line.startswith(f"{key}="), (text, line)
    fractions = ["1.5", "0.25", "1e400"] if is_int or not SCHEMA[section][name].rounded \
        else ["1e400"]
    for text in [str(10 ** 400), str(1 << 63), *fractions]:
        line = load_error(config_file=yaml_file(tmp_path, key, text))
        assert line.startswith(f"{key}="), (text, line)


def test_the_largest_integer_and_size_still_load():
    cfg = config.load(["workload=default", f"train.seed={(1 << 63) - 1}",
                       f"io.allreduce_bytes={(1 << 63) - 1}", "io.stdio_buffer=8e18"])
    assert cfg.train.seed == (1 << 63) - 1 and cfg.io.allreduce_bytes == (1 << 63) - 1
    assert cfg.io.stdio_buffer == 8 * 10 ** 18


@pytest.mark.parametrize("key", NUMERIC_KEYS)
def test_nan_is_exit_2_naming_the_key_before_any_io(tmp_path, key):
    data = tmp_path / "data"
    p = dlio(tmp_path, "generate", "workload=default", f"dataset.data_folder={data}",
             f"{key}=nan")
    assert_config_error(p, f"{key}=")
    assert not data.exists()


@pytest.mark.parametrize("command,value", [("run", ".nan"), ("run", ".inf"),
                                           ("generate", "-.inf")])
def test_a_non_finite_value_in_a_config_file_stops_a_run_before_any_io(tmp_path, command,
                                                                         value):
    f = tmp_path / "w.yaml"
    f.write_text(f"train:\n  computation_time: {value}\nmetric:\n  au: 0.5\n")
    data, out = tmp_path / "data", tmp_path / "out"
    p = dlio(tmp_path, command, "--config", f, f"dataset.data_folder={data}",
             f"output.folder={out}")
    assert_config_error(p, f"train.computation_time={float(value.replace('.', '', 1))!r}",
                        "not a finite number")
    assert not data.exists() and not out.exists()


def test_metric_au_nan_is_refused(tmp_path):
    out = tmp_path / "out"
    p = dlio(tmp_path, "run", "workload=default", "metric.au=nan", f"output.folder={out}",
             f"dataset.data_folder={tmp_path / 'data'}")
    assert_config_error(p, "metric.au='nan': not a finite number")
    assert not out.exists()


# F4: anchors and aliases bounded while the YAML is read

def bomb(levels=9, width=10):
    """YAML lines of a mapping whose last entry expands to width**levels values."""
    names = [f"l{i}" for i in range(levels + 1)]
    lines = [f"{names[0]}: &{names[0]} [{', '.join(['lol'] * width)}]"]
    for prev, name in zip(names, names[1:]):
        lines.append(f"{name}: &{name} [{', '.join([f'*{prev}'] * width)}]")
    return lines


@pytest.mark.parametrize("section,key", [("checkpoint", "ksm"), ("io", "mpiio_hints"),
                                         ("output", "metric")])
def test_a_yaml_bomb_in_a_mapping_key_is_refused_fast(tmp_path, section, key):
    f = tmp_path / "bomb.yaml"
    f.write_text(f"{section}:\n  {key}:\n" + "".join(f"    {line}\n" for line in bomb()))
    tracemalloc.start()
    started = time.monotonic()
    try:
        with pytest.raises(config.ConfigError) as ei:
            config.load(config_file=str(f))
        took = time.monotonic() - started
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    line = str(ei.value)
    assert line.startswith(f"{f} line ") and "aliases" in line and "\n" not in line, line
    assert took < 5 and peak < 64 << 20, (took, peak)


def test_a_yaml_bomb_is_exit_2_naming_the_file_with_bounded_memory(tmp_path):
    f = tmp_path / "bomb.yaml"
    f.write_text("checkpoint:\n  ksm:\n" + "".join(f"    {line}\n" for line in bomb(12)))
    data, out = tmp_path / "data", tmp_path / "out"
    p = dlio(tmp_path, "run", "--config", f, f"dataset.data_folder={data}",
             f"output.folder={out}", limit_bytes=2 << 30, timeout=30)
    assert_config_error(p, str(f), "values once its aliases are expanded")
    assert not data.exists() and not out.exists()


def test_a_yaml_bomb_in_an_override_is_refused():
    inner = "{" + ", ".join(bomb()) + "}"
    for override in (f"io.mpiio_hints={inner}", f"io.mpiio_hints.bomb={inner}",
                     f"train.computation_time={inner}"):
        line = load_error(override)
        assert line.startswith(override.split("=")[0] + ": refused: alias"), line


def test_a_workload_file_with_a_few_anchors_still_loads(tmp_path):
    f = tmp_path / "w.yaml"
    f.write_text("""\
checkpoint:
  ksm: &hints {cb_nodes: 2, romio_cb_read: enable}
dataset:
  num_files_train: &files 4
  num_files_eval: *files
  num_samples_per_file: 2
  record_length: &size 4k
reader:
  batch_size: &batch 2
  batch_size_eval: *batch
  transfer_size: *size
train:
  computation_time: &compute {type: normal, mean: 1e-3, stdev: 0}
evaluation:
  eval_time: *compute
io:
  mpiio_hints:
    <<: *hints
    cb_buffer_size: 1048576
""")
    cfg = config.load(config_file=str(f))
    assert cfg.dataset.num_files_eval == 4 and cfg.reader.transfer_size == 4096
    assert cfg.reader.batch_size_eval == 2
    assert cfg.evaluation.eval_time == {"type": "normal", "mean": 0.001, "stdev": 0.0}
    assert cfg.io.mpiio_hints == {"cb_nodes": 2, "romio_cb_read": "enable",
                                  "cb_buffer_size": 1048576}


@pytest.mark.parametrize("content,words", [
    ("checkpoint:\n  ksm: &a {x: *a}\n", "line 2: refused: alias *a is inside the collection"),
    ("checkpoint:\n  ksm: " + "[" * 100 + "]" * 100 + "\n",
     "refused: collections nested deeper than"),
    ("dataset:\n  num_files_train: 1" + "0" * 5000 + "\n", ": a value cannot be read"),
])
def test_a_self_referring_deep_or_oversized_document_is_one_line(tmp_path, content, words):
    f = tmp_path / "w.yaml"
    f.write_text(content)
    line = load_error(config_file=str(f))
    assert line.startswith(str(f)) and words in line, line


# F10: the number options of the command line

@pytest.mark.parametrize("args", [["--budget", "nan"], ["--budget", "inf"],
                                  ["--budget", "-inf"], ["--budget", "NaN"],
                                  ["--paper", "--io-share", "nan"]])
def test_advise_refuses_a_non_finite_number_option_at_once(tmp_path, args):
    p = dlio(tmp_path, "advise", "workload=default", *args, "--out", tmp_path / "study",
             timeout=30)
    assert p.returncode == 2, p.stdout[-2000:] + p.stderr[-2000:]
    assert "is not a finite number" in p.stderr and args[-2] in p.stderr, p.stderr
    assert "Traceback" not in p.stderr and not (tmp_path / "study").exists()


def test_a_number_option_takes_the_forms_of_a_workload_number():
    from dlio_mpi.config.option_types import FiniteFloatRange
    budget = FiniteFloatRange(min=1.0)
    assert budget.convert("1e3", None, None) == 1000.0
    assert budget.convert(900.0, None, None) == 900.0
    for bad in ("nan", "inf", float("nan"), "0.5", "abc"):
        with pytest.raises(click.BadParameter):
            budget.convert(bad, None, None)
    assert math.isclose(FiniteFloatRange(0.001, 0.999).convert("5e-1", None, None), 0.5)
