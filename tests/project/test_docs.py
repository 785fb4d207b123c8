"""The documentation: docs/ builds with Sphinx with warnings as errors; the configuration
reference names every key of the schema; the outputs reference names every field a real run
writes to summary.json and per_rank.csv; the README stays one screen (at most 10 KB) with the
two commands first, and every picture it shows is in the repository."""
import csv
import json
import os
import re
import subprocess
import sys

from mpirun import run_mpi
import pytest

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = os.path.join(ROOT, "docs")


def read(*parts):
    with open(os.path.join(ROOT, *parts)) as f:
        return f.read()


def test_docs_build_with_warnings_as_errors(tmp_path):
    p = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                        "-d", str(tmp_path / "doctrees"), DOCS, str(tmp_path / "html")],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    for page in ("index", "install", "running", "configuration", "outputs", "darshan", "advise",
                 "design", "benchmarks"):
        assert (tmp_path / "html" / f"{page}.html").exists(), page


def test_configuration_reference_is_generated_from_the_schema_and_names_every_key():
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    try:
        import config_reference
    finally:
        sys.path.pop(0)
    from dlio_mpi.config.schema import SCHEMA

    text = config_reference.markdown()
    assert read("docs", "configuration.md") == text, (
        "docs/configuration.md is not what the schema makes: run "
        "python scripts/config_reference.py docs/configuration.md")
    for section, keys in SCHEMA.items():
        assert f"## {section}\n" in text
        for name, key in keys.items():
            row = next((line for line in text.splitlines()
                        if line.startswith(f"| `{section}.{name}` |")), None)
            assert row is not None, f"{section}.{name}"
            assert key.doc.split()[0] in row, row


def _documented():
    return set(re.findall(r"`([A-Za-z0-9_]+)`", read("docs", "outputs.md")))


def test_every_output_field_of_a_run_is_documented(tmp_path):
    out = tmp_path / "out"
    run_mpi(1, "run_cli.py", "run", f"dataset.data_folder={tmp_path}/data", f"output.folder={out}",
            f"checkpoint.checkpoint_folder={tmp_path}/ckpt", "dataset.num_files_train=4",
            "dataset.num_samples_per_file=2", "reader.batch_size=2", "train.epochs=2",
            "workflow.evaluation=true", "dataset.num_files_eval=2", "workflow.checkpoint=true",
            "model.model_size_bytes=1m", "-q", timeout=180)
    with open(out / "latest" / "summary.json") as f:
        summary = json.load(f)
    own = summary["dlio_mpi"]
    fields = set(summary) | set(summary["metric"]) | set(own) | set(own["facts"]) \
        | set(own["startup"])
    for entries in (own["epochs"], own["evaluations"], own["checkpoints"]):
        assert entries
        for entry in entries:
            fields |= set(entry)
    with open(out / "latest" / "per_rank.csv") as f:
        columns = next(csv.reader(f))
    fields |= {re.sub(r"^(train|eval)\d+_", "PHASE_", c) for c in columns}
    assert "eval_au_percentage" in fields and "save_checkpoint_io_mean_GB_per_second" in fields
    missing = sorted(fields - _documented())
    assert missing == []


def test_readme_is_one_screen_with_the_two_commands_first():
    text = read("README.md")
    assert len(text.encode()) <= 10 * 1024
    commands = re.findall(r"^    (\S.*)$", text, flags=re.M)
    assert commands[:2] == ["scripts/demo", "scripts/test"]
    assert "scripts/test" in read(".ci", "run")


def test_readme_pictures_and_links_exist():
    text = read("README.md")
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if not re.match(r"[a-z]+://", t)]
    assert any(t.endswith(".png") for t in local)
    for target in local:
        assert os.path.exists(os.path.join(ROOT, target)), target
