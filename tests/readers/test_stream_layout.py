"""epoch_requests.stream_layout: a stream's epoch plan (access.ReadPlan) as the C step loop's
requests: a step's run of reads of one file is a segment, the plan's reads are the ranges in
order, and a step that reads nothing gets one segment of no ranges (of the file read last)."""
import numpy as np

from dlio_mpi.readers import access
from dlio_mpi.readers.epoch_requests import stream_layout


def _plan(first, files, offs, lens):
    a = lambda x: np.asarray(x, np.int64)       # noqa: E731
    return access.ReadPlan(a(first), a(files), a(offs), a(lens))


def _segments(lay):
    """Per step: [(file, [range indexes])] of its segments."""
    out = []
    for k in range(len(lay.step_seg) - 1):
        segs = []
        for g in range(lay.step_seg[k], lay.step_seg[k + 1]):
            segs.append((int(lay.files[lay.seg_slot[g]]),
                         lay.range_at[lay.seg_range[g]:lay.seg_range[g + 1]].tolist()))
        out.append(segs)
    return out


def test_runs_of_one_file_and_steps_without_reads():
    # step 0: file 7 twice then file 3; step 1: nothing; step 2: file 7; step 3: nothing
    plan = _plan([0, 3, 3, 4, 4], [7, 7, 3, 7], [0, 10, 0, 20], [10, 10, 10, 10])
    lay = stream_layout(plan)
    assert lay.files.tolist() == [3, 7]
    assert _segments(lay) == [[(7, [0, 1]), (3, [2])], [(3, [])], [(7, [3])], [(7, [])]]
    assert lay.range_at.tolist() == [0, 1, 2, 3]
    assert lay.seg_range[-1] == 4


def test_a_first_step_without_reads_takes_the_first_file():
    plan = _plan([0, 0, 2], [5, 5], [0, 8], [8, 8])
    assert _segments(stream_layout(plan)) == [[(5, [])], [(5, [0, 1])]]


def test_the_same_file_in_two_steps_is_two_segments():
    plan = _plan([0, 2, 3], [4, 4, 4], [0, 8, 16], [8, 8, 8])
    assert _segments(stream_layout(plan)) == [[(4, [0, 1])], [(4, [2])]]


def test_a_real_stream_plan_every_read_once_in_order():
    sizes = [100, 37, 64]
    ends = [np.array([30, 60, 100]), np.array([20, 37]), np.array([10, 40, 64])]
    plan = access.stream_reads(np.array([9, 2, 6]), sizes, ends, steps=4, batch=2, lead=0,
                               xfer=16, eof=1)
    lay = stream_layout(plan)
    segs = _segments(lay)
    assert len(segs) == 4 and all(segs)
    flat = [r for step in segs for _, rs in step for r in rs]
    assert flat == list(range(len(plan.file)))
    for step in segs:
        for f, rs in step:
            assert all(int(plan.file[r]) == f for r in rs)
