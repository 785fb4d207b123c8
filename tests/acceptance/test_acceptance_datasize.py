"""The minimum dataset of MLPerf Storage's rules (Submission_guidelines.md, "Minimum dataset
size"): min_samples = max(500 x batch x accelerators, hosts x memory x 5 / record_length),
files = min_samples / samples per file, both rounded up so that the dataset is at least what
the rules ask; the rule that decided named; subfolders beyond 128 Ki files; the command's
arithmetic and JSON line; bad input one line and exit 2."""
import json
import math
import subprocess
import sys

import pytest

from dlio_mpi.acceptance import datasize
from dlio_mpi.acceptance.rules import AcceptanceError

GIB = 2**30
# the shipped workloads' figures the rules size with (record length, samples per file, batch)
UNET3D = (146600628, 1, 7)
RESNET50 = (114660, 1251, 400)
COSMOFLOW = (2828486, 1, 1)


def guideline(record, spf, batch, hosts, accelerators, memory_gib):
    """The guidelines' formulas, written out as they state them."""
    by_steps = 500 * batch * accelerators
    by_memory = hosts * memory_gib * 5 * 1024 * 1024 * 1024 / record
    samples = max(by_steps, math.ceil(by_memory))
    return math.ceil(samples / spf), ("500 steps per epoch" if by_steps >= by_memory
                                      else "5x client memory")


@pytest.mark.parametrize("shape,hosts,accelerators,memory_gib,files,rule", [
    # unet3d, one host of 128 GiB, 8 accelerators: 28,000 samples by the steps rule, 4,688
    # by memory (4,687.5 rounded up)
    (UNET3D, 1, 8, 128, 28_000, "500 steps per epoch"),
    # unet3d, 8 hosts of 2 TiB, 8 accelerators each: memory decides (600,003.8 samples against
    # 224,000 by steps)
    (UNET3D, 8, 64, 2048, 600_004, "5x client memory"),
    # resnet50, one host of 32 GiB, 16 accelerators: 3,200,000 samples by steps (1,498,331.5
    # by memory) / 1,251 per file = 2,557.95
    (RESNET50, 1, 16, 32, 2_558, "500 steps per epoch"),
    # resnet50, 2 hosts of 1 TiB, 2 accelerators: 95,893,217.1 samples by memory / 1,251
    (RESNET50, 2, 2, 1024, 76_654, "5x client memory"),
    # cosmoflow, one host of 64 GiB, 32 accelerators: 16,000 by steps, 121,477.5 by memory
    (COSMOFLOW, 1, 32, 64, 121_478, "5x client memory"),
])
def test_minimum_against_the_guidelines(shape, hosts, accelerators, memory_gib, files, rule):
    record, spf, batch = shape
    m = datasize.minimum(record_length=record, samples_per_file=spf, batch_size=batch,
                         hosts=hosts, accelerators=accelerators,
                         host_memory_bytes=hosts * memory_gib * GIB)
    want, want_rule = guideline(record, spf, batch, hosts, accelerators, memory_gib)
    assert (m.num_files_train, m.rule) == (want, want_rule) == (files or want, rule)
    # at least what the rules ask, and one file fewer would be under it
    total = m.num_files_train * spf
    assert total >= 500 * batch * accelerators
    assert total * record >= 5 * hosts * memory_gib * GIB
    fewer = (m.num_files_train - 1) * spf
    assert fewer < 500 * batch * accelerators or fewer * record < 5 * hosts * memory_gib * GIB
    assert m.dataset_bytes == m.num_files_train * spf * record


def test_memory_rule_rounds_up_not_down():
    # 5 x 1 GiB / 3 bytes = 1,789,569,706.67 samples: 1,789,569,707 (truncating would leave
    # the dataset under 5x)
    m = datasize.minimum(record_length=3, samples_per_file=1, batch_size=1, hosts=1,
                         accelerators=1, host_memory_bytes=GIB)
    assert m.samples_by_memory == 1_789_569_707
    assert m.num_files_train * 3 >= 5 * GIB


def test_subfolders_beyond_128ki_files():
    assert datasize.subfolders(128 * 1024) == 0
    assert datasize.subfolders(128 * 1024 + 1) == 14        # 131,073 / 10,000, rounded up
    # cosmoflow on 4 hosts of 512 GiB: 3,887,280 files in 389 subfolders of at most 10,000
    m = datasize.minimum(record_length=COSMOFLOW[0], samples_per_file=1, batch_size=1, hosts=4,
                         accelerators=64, host_memory_bytes=4 * 512 * GIB)
    assert m.num_files_train == math.ceil(4 * 512 * 5 * GIB / COSMOFLOW[0]) == 3_887_280
    assert m.num_subfolders_train == 389
    assert m.num_files_train / m.num_subfolders_train <= 10_000


def test_uneven_hosts_refused():
    with pytest.raises(AcceptanceError, match="every host runs the same number"):
        datasize.check_even(3, 8)


def cli(*args):
    return subprocess.run([sys.executable, "-m", "dlio_mpi", "acceptance", "datasize", *args],
                          capture_output=True, text=True, timeout=60)


def test_command_prints_the_arithmetic_and_json():
    p = cli("unet3d", "--hosts", "2", "--accelerators", "16", "--host-memory-gib", "256")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == "500 steps per epoch: 500 x batch 7 x 16 accelerators = 56,000 samples"
    assert "5 x 2 hosts x 256.00 GiB / 146,600,628 bytes per sample = 18,751 samples" \
        in lines[1]
    files, rule = guideline(*UNET3D, 2, 16, 256)
    assert json.loads(lines[-1]) == {"num_files_train": files, "num_subfolders_train": 0,
                                     "dataset_gib": round(files * UNET3D[0] / GIB, 3),
                                     "rule": rule}


def test_command_uses_this_hosts_memory_by_default():
    from dlio_mpi.run import sysinfo

    p = cli("cosmoflow", "--accelerators", "2")
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout.splitlines()[-1])
    want = math.ceil(5 * sysinfo.memory_bytes() / COSMOFLOW[0])
    assert got["num_files_train"] == max(want, 1000)


@pytest.mark.parametrize("args,line", [
    (("bert", "--accelerators", "2"),
     "dlio_mpi: acceptance: workload 'bert': MLPerf Storage's training rules define "
     "cosmoflow, resnet50, unet3d"),
    (("unet3d", "--hosts", "3", "--accelerators", "8"),
     "dlio_mpi: acceptance: 8 accelerators on 3 hosts: every host runs the same number of "
     "accelerators (the total is a multiple of the hosts)"),
    (("unet3d", "--accelerators", "0"), "dlio_mpi: acceptance: --accelerators 0: must be at "
     "least 1"),
    (("unet3d", "--accelerators", "2", "--host-memory-gib", "0"),
     "dlio_mpi: acceptance: --host-memory-gib 0: must be more than 0"),
    (("unet3d", "--accelerators", "2", "reader.batch_size=zero"),
     "dlio_mpi: acceptance: config error: "),
])
def test_bad_input_one_line_exit_2(args, line):
    p = cli(*args)
    assert p.returncode == 2
    assert "Traceback" not in p.stderr
    assert len(p.stderr.splitlines()) == 1 and p.stderr.startswith(line), p.stderr
