"""torch.load's reads of a zip: a checkpoint's load reads the tail after its last tensor (the
DLIO benchmark's traces), a sample file's load ends with its last tensor (torch 2.13 under
strace, files of one and four tensors; the torch_load_samples log)."""
from dlio_mpi.checkpoint.zip_reads import torch_load_reads


def test_a_sample_load_ends_with_its_last_tensor():
    size = 50651
    with_tail = torch_load_reads(size, 1)
    without = torch_load_reads(size, 1, tail=False)
    assert with_tail[:-1] == without and len(without) == 12
    last = without[-1]
    assert last[0] + last[1] < size            # the zip's tail is not read again
    assert with_tail[-1][0] + with_tail[-1][1] == size
    assert len(torch_load_reads(4196341, 4, tail=False)) == 9 + 1 + 2 * 4
