"""The op log's format (dlio_mpi.run.oplog_format) is csrc/dm.h's, and its ids name files back."""
import os

from dlio_mpi.run import oplog_format
from dlio_mpi.run.oplog_format import header_mismatches

HEADER = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "csrc",
                      "dm.h")


def _header():
    with open(HEADER) as f:
        return f.read()


def test_the_codes_are_the_headers():
    assert header_mismatches(_header()) == []


def test_a_header_that_differs_is_named():
    text = _header()
    renamed = header_mismatches(text.replace("DM_OP_VIEW = 9", "DM_OP_VIEWS = 9"))
    assert len(renamed) == 1 and "enum dm_op" in renamed[0] and "VIEWS=9" in renamed[0]
    moved = header_mismatches(text.replace("DM_IF_IO_URING = 9, DM_IF_N = 10",
                                           "DM_IF_IO_URING = 9, DM_IF_GDS = 10, DM_IF_N = 11"))
    assert len(moved) == 2 and "DM_IF_N is 11" in moved[1]
    assert header_mismatches("") == ["csrc/dm.h: no enum dm_op", "csrc/dm.h: no enum dm_iface"]


def test_the_engines_use_the_same_codes():
    from dlio_mpi import engines

    assert engines.OPS == oplog_format.OPS and engines.IFACES == oplog_format.IFACES
    assert engines.OP["fdatasync"] == 5 and engines.IFACE["hdf5_sec2"] == 8


def test_ids_name_their_files_back():
    cid = oplog_format.companion_id(2, 37)
    assert cid == (1 << 28) + (2 << 20) + 37 and oplog_format.companion_of(cid) == (2, 37)
    kid = oplog_format.checkpoint_id(5, 3)
    assert kid == (1 << 30) + 5 * 8 + 3 and oplog_format.checkpoint_of(kid) == (5, 3)
    assert oplog_format.checkpoint_id((1 << 24) + 1) == oplog_format.checkpoint_id(1)
    assert oplog_format.data_file_name("valid", 12, 40, "img", ".npz", 5) == \
        "valid/2/img_0000012_of_40.npz"
    assert oplog_format.file_name(7) == "oplog_rank00007.npz"
    assert oplog_format.rank_of("/x/oplog_rank00007.npz") == 7
