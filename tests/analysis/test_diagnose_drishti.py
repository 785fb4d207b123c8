"""Drishti 0.8 beside analyze diagnose: every issue code Drishti reports on a log has a finding
of the same kind (dlio_mpi_analysis.diagnosis.finding_kinds), or a reason in docs/diagnose.md's table of
disagreements. Runs where Drishti is installed (its own venv): $DRISHTI names its program,
else `drishti` on PATH; skipped otherwise."""

import csv
import os
import re
import shutil
import subprocess
import warnings

import pytest

from dlio_mpi_analysis.diagnosis.diagnosis_report import diagnose_path
from dlio_mpi_analysis.errors import AnalysisWarning
from dlio_mpi_analysis.diagnosis.finding_kinds import KINDS

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(HERE, "..", "fixtures", "darshan")
DOC = os.path.join(REPO, "docs", "diagnose.md")
# the codes of the problems diagnose covers (Drishti's informational ones left aside)
CODES = ("P05 P06 P07 P08 P09 P10 P11 P13 P15 P16 P17 P18 P19 S01 M02 M03 M06 M07 M08 "
         "M09").split()
FIXTURE_LOGS = ("ior_random_write.darshan", "dlio_jpeg.darshan", "ior_mpiio_coll_sm.darshan",
                "dup_descriptor.darshan")
SHARED_LOGS = ("imbalanced_io", "skew_io__skew-app", "skew_io__skew-autobench-ior",
               "stdio_no_posix", "hdf5_diagonal_write_only__hdf5_diagonal_write_1_byte",
               "ior_daos__snyder_ior-DFS", "apmpi_apxc")


def drishti_program():
    program = os.environ.get("DRISHTI") or shutil.which("drishti")
    if not program or not os.access(program, os.X_OK):
        pytest.skip("Drishti not installed (set DRISHTI to its program, or put it on PATH)")
    return program


def documented_codes():
    """The Drishti codes of the disagreement table in docs/diagnose.md."""
    with open(DOC) as f:
        text = f.read()
    table = text[text.index("## Where Drishti 0.8 and diagnose disagree"):]
    table = table[:table.index("\n\n", table.index("| Drishti code"))]
    return {code for row in table.splitlines()[2:] if row.startswith("| ")
            for code in re.findall(r"[PSM]\d\d", row.split("|")[1])}


def drishti_codes(program, log, out_dir):
    subprocess.run([program, "--csv", "--export_dir", str(out_dir), log], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300)
    name = os.path.basename(log)
    name = name[:-len(".darshan")] if name.endswith(".darshan") else name
    with open(os.path.join(out_dir, name + ".csv")) as f:
        row = next(csv.DictReader(f))
    return {code for code in CODES if row.get(code) == "True"}


def logs(log):
    return [os.path.join(FIXTURES, n) for n in FIXTURE_LOGS] + [log(p) for p in SHARED_LOGS]


def test_the_vocabulary_covers_every_drishti_code():
    covered = {code for kind in KINDS.values() for code in kind.drishti}
    assert covered == set(CODES)


def test_every_drishti_code_has_a_finding_or_a_documented_reason(log, tmp_path):
    program = drishti_program()
    documented = documented_codes()
    assert documented <= set(CODES)
    unexplained, matched = [], 0
    for path in logs(log):
        with warnings.catch_warnings():     # partial logs: test_darshan_loader checks them
            warnings.simplefilter("ignore", AnalysisWarning)
            ours = {f["id"] for f in diagnose_path(path)["findings"]}
        for code in sorted(drishti_codes(program, path, tmp_path)):
            if any(code in KINDS[i].drishti for i in ours):
                matched += 1
            elif code not in documented:
                unexplained.append(f"{os.path.basename(path)}: {code}")
    assert not unexplained, unexplained
    assert matched >= 20        # the two agree on most of what Drishti reports
