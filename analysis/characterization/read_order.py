"""The order of a job's data reads above POSIX: whether its MPI-IO or HDF5 read calls take the
data in order, call after call, or jump about (a shuffled sample order). ``write_order`` is
the same measure of the write calls (data and checkpoint files written in order, or at random
offsets as IOR's -z writes).

Darshan's sequential and consecutive counters are POSIX's; above POSIX the order must come
from the traces. A collective call's DXT_MPIIO segment carries no offset (-1): each rank's
request is handed to the aggregators, whose POSIX reads of the file domains are what reaches
the file system. The order is recovered from them: the k-th collective read call of a file is
entered by every rank together (the calls of the size that moves the most bytes: libhdf5's
metadata reads through MPI-IO carry no offset either in Darshan 3.5's trace), and an
aggregator's POSIX reads made while it is inside its
own k-th call are part of that call. A dlio_mpi op log
records each rank's own request of each call (MPI-IO, and H5D with the row's byte offset in
the dataset), which gives the same pieces (the ranks' requests are what the aggregators read).

The measure, ``continuity``: the pieces each call reads (all ranks together, overlapping or
touching pieces merged) are put in file order and compared with the previous call's, the
i-th with the i-th (a lane: a rank's stream when each rank reads its own place): the share
of the pieces that lie at or after their lane's previous piece, over every call but the first
of each file (when two calls' pieces are not as many, a piece's lane is its place in its
call's order scaled to the other call's: random draws of pieces that sometimes touch and
merge move about half of them forward, as those that do not). Ranks
that each read their block in order, whatever the layout (contiguous blocks, IOR's segments,
every ranks-th sample), move every lane forward: 1. A shuffled sample order moves a lane
forward about half of the time."""

import numpy as np

from dlio_mpi_analysis.characterization.layers import dataset_file
from dlio_mpi_analysis.loading.trace_ops import as_trace_table, op_code

# traces of a layer's calls, from which the pieces of each call are taken
TRACES = {"MPI-IO": "DXT_MPIIO", "HDF5": "DXT_H5D"}


def continuity(calls):
    """(pieces read in order, pieces after the first call) of one file's calls: a list, in
    call order, of (offsets, lengths) arrays read by the call (all ranks)."""
    in_order = total = 0
    previous = None
    for offs, lens in calls:
        starts, _ = _merged(np.asarray(offs, np.int64), np.asarray(lens, np.int64))
        if not len(starts):
            continue
        if previous is not None:
            total += len(starts)
            # lane i of this call against the previous call's at the same place in its
            # order (the i-th when both have as many pieces)
            lane = (np.arange(len(starts)) * len(previous)) // len(starts)
            in_order += int((starts >= previous[lane]).sum())
        previous = starts
    return in_order, total


def _merged(offs, lens):
    """Starts and ends of the union of the pieces (touching pieces joined)."""
    keep = lens > 0
    offs, ends = offs[keep], offs[keep] + lens[keep]
    if not len(offs):
        return offs, ends
    order = np.argsort(offs, kind="stable")
    offs, ends = offs[order], ends[order]
    reach = np.maximum.accumulate(ends)
    new = np.ones(len(offs), bool)
    new[1:] = offs[1:] > reach[:-1]
    group = np.cumsum(new) - 1
    starts = offs[new]
    stops = np.zeros(len(starts), np.int64)
    np.maximum.at(stops, group, ends)
    return starts, stops


def _ranked_calls(reads, per=1):
    """The calls of one file from each rank's own requests (offsets known): call k is every
    rank's k-th read (its k-th run of ``per`` reads: the reads beneath one call above)."""
    reads = reads.sorted_by("rank", "start")
    k = _position_in_rank(reads["rank"]) // per
    offs, lens = reads["offset"], reads["length"]
    return [(offs[k == i], lens[k == i]) for i in range(int(k.max()) + 1 if len(k) else 0)]


def _windowed_calls(collective, posix, per=1):
    """The calls of one file from the aggregators' POSIX reads (module docstring): a rank's
    POSIX read inside its own k-th collective read call is part of call k (inside its k-th
    run of ``per`` calls: the calls beneath one call above); None when the ranks' call counts
    differ."""
    collective = collective.sorted_by("rank", "start")
    ranks, counts = np.unique(collective["rank"], return_counts=True)
    if len(np.unique(counts)) != 1 or counts[0] % per:
        return None
    n = int(counts[0]) // per
    pieces = [([], []) for _ in range(n)]
    for rank in ranks:
        own = collective[collective["rank"] == rank]
        mine = posix[posix["rank"] == rank]
        starts = mine["start"]
        offs, lens = mine["offset"], mine["length"]
        for k, (a, z) in enumerate(zip(own["start"], own["end"])):
            inside = (starts >= a) & (starts <= z)
            pieces[k // per][0].append(offs[inside])
            pieces[k // per][1].append(lens[inside])
    return [(np.concatenate(o), np.concatenate(n_)) for o, n_ in pieces]


def _position_in_rank(ranks):
    """Each row's place among its rank's rows (0 for the first), rows sorted by rank."""
    if not len(ranks):
        return np.zeros(0, np.int64)
    first = np.flatnonzero(np.r_[True, ranks[1:] != ranks[:-1]])
    return np.arange(len(ranks)) - np.repeat(first, np.diff(np.r_[first, len(ranks)]))


def read_order(segments, layer, ids=None, names=None, per_call=None):
    """The continuity share (module docstring) of the data reads at ``layer`` ("MPI-IO" or
    "HDF5") of a job's DXT segments (module -> Table), over the files ``ids`` (record ids;
    all when None; with ``names``, record id -> name, also the datasets in those files, as
    an op log's H5D trace names them); None when the traces cannot show it (no trace of the layer, collective
    calls without an aggregators' POSIX trace, fewer than two calls per file). ``per_call``
    (file id -> n, reads_per_h5dread): at HDF5 from the MPI-IO calls beneath, each rank's
    runs of n data reads are one H5Dread's."""
    return call_order(segments, layer, ids, names, "read", per_call)


def reads_per_h5dread(segments, records, names, ids):
    """File id -> the MPI-IO data reads libhdf5 made for each H5Dread of the file (a box over
    several chunks reads each chunk on its own), where Darshan traced the MPI-IO calls but
    not the H5Dread calls above them: the file's data-sized independent DXT_MPIIO reads over
    its datasets' H5D_READS, when a whole number above 1 (an H5Dread a call, as an op log's
    H5D trace has them)."""
    frame = as_trace_table((segments or {}).get("DXT_MPIIO"))
    h5d = (records or {}).get("H5D")
    if frame is None or frame.empty or "DXT_H5D" in (segments or {}) or h5d is None \
            or h5d.empty or "H5D_READS" not in h5d:
        return {}
    reads = frame[frame["op"] == op_code("read")]
    out = {}
    for fid in set(ids or ()):
        name = names.get(int(fid), "")
        mine = np.asarray([dataset_file(names.get(int(i), "")) == name for i in h5d["id"]],
                          dtype=bool)
        calls = int(np.asarray(h5d["H5D_READS"])[mine].clip(min=0).sum()) if mine.any() else 0
        of_file = reads[reads["id"] == np.uint64(fid)]
        if not calls or of_file.empty:
            continue
        n = len(_data_sized(of_file))
        if n % calls == 0 and n // calls > 1:
            out[int(fid)] = n // calls
    return out


def write_order(segments, layer, ids=None, names=None):
    """The continuity share of the write calls, as :func:`read_order` of the reads."""
    return call_order(segments, layer, ids, names, "write")


def call_order(segments, layer, ids, names, op, per_call=None):
    """The continuity share of the calls of ``op`` ("read" or "write"): see read_order."""
    continued = total = 0
    for _, pieces in file_calls(segments, layer, ids, names, op, per_call):
        c, t = continuity(pieces)
        continued, total = continued + c, total + t
    return continued / total if total else None


def collective_lanes(segments, ids, ranks, layer="MPI-IO", piece=None):
    """The ranks' own reads of collective read calls, as an independent job's trace would show
    them: a DataFrame (rank, offset, length) where each call of a file read by ``ranks``
    ranks has one piece a rank (the call's pieces in file order, the i-th rank i's: every
    layout of whole pieces a rank puts the ranks' pieces in rank order within a call, as IOR's
    segments, contiguous blocks and every ranks-th sample do); with ``piece`` (the bytes of a
    rank's own call), pieces that touch are cut back into pieces of that size; None when no
    file's calls show it (a call of another number of pieces, or no trace)."""
    import pandas as pd
    rows = []
    for _, pieces in file_calls(segments, layer, ids, None, "read"):
        lanes = []
        for offs, lens in pieces:
            starts, stops = _merged(np.asarray(offs, np.int64), np.asarray(lens, np.int64))
            if piece and len(starts) != ranks and not ((stops - starts) % piece).any():
                cut = [np.arange(a, b, piece) for a, b in zip(starts, stops)]
                starts = np.concatenate(cut)
                stops = starts + piece
            if len(starts) != ranks:
                lanes = None
                break
            lanes.append((starts, stops - starts))
        for starts, lens in lanes or ():
            rows += [(r, int(o), int(n)) for r, (o, n) in enumerate(zip(starts, lens))]
    if not rows:
        return None
    return pd.DataFrame(rows, columns=["rank", "offset", "length"])


def file_calls(segments, layer, ids, names, op, per_call=None):
    """(record id, its calls' pieces) of each file's calls of ``op`` at ``layer``: a list, in
    call order, of (offsets, lengths) arrays (module docstring: a collective call's from the
    aggregators' POSIX calls inside it), for the files whose calls can be told."""
    frame = (segments or {}).get(TRACES.get(layer, ""))
    if frame is None and layer == "HDF5":
        frame = (segments or {}).get("DXT_MPIIO")       # libhdf5's MPI-IO calls beneath
    frame = as_trace_table(frame)
    if frame is None or frame.empty:
        return
    code = op_code(op)
    calls = frame[frame["op"] == code]
    if ids is not None:
        ids = set(ids)
        if names:
            files = {names.get(i) for i in ids}
            ids |= {int(i) for i in np.unique(calls["id"])
                    if dataset_file(names.get(int(i), "")) in files}
        calls = calls[np.isin(calls["id"], np.array(sorted(ids), dtype=np.uint64))]
    posix = as_trace_table((segments or {}).get("DXT_POSIX"))
    if posix is not None:
        posix = posix[posix["op"] == code]
    for fid in np.unique(calls["id"]):
        calls_of_file = calls[calls["id"] == fid]
        blind = calls_of_file["offset"] < 0
        if blind.any():
            if posix is None:
                continue
            blind_calls = calls_of_file[blind]
            # the data calls: those of the size that moves the most bytes (libhdf5's own
            # metadata calls beneath an H5Fopen are small, some on one rank only)
            sizes, of = np.unique(blind_calls["length"], return_inverse=True)
            moved = np.zeros(len(sizes), np.int64)
            np.add.at(moved, of.reshape(-1), blind_calls["length"].astype(np.int64))
            data_calls = blind_calls[blind_calls["length"] == sizes[int(np.argmax(moved))]]
            pieces = _windowed_calls(data_calls, posix[posix["id"] == fid],
                                     (per_call or {}).get(int(fid), 1))
        else:
            if layer == "HDF5":
                # the rows' reads: a sample's fields read after them (an op log's H5D trace
                # keeps them under the file's dataset) are no step of the rows' order, as the
                # calls of the size moving the most bytes alone are beneath libhdf5
                calls_of_file = _data_sized(calls_of_file)
            pieces = _ranked_calls(calls_of_file, (per_call or {}).get(int(fid), 1))
        if pieces is not None:
            yield int(fid), pieces


def _data_sized(calls):
    """The calls of at least half the size that moves the most bytes."""
    sizes, of = np.unique(calls["length"], return_inverse=True)
    if len(sizes) < 2:
        return calls
    moved = np.zeros(len(sizes), np.int64)
    np.add.at(moved, of.reshape(-1), calls["length"].astype(np.int64))
    return calls[calls["length"] >= sizes[int(np.argmax(moved))] // 2]
