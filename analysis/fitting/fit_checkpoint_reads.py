"""How a checkpoint-only job read its checkpoints back, as dlio_mpi_analysis.fitting.fit tells it
from the DXT trace of the files read back: in pieces front to back (the emulator's default,
checkpoint.read_pattern=pieces), or as torch.load reads the zip torch.save makes
(checkpoint.read_pattern=torch_zip, dlio_mpi.checkpoint.zip_reads).

A file is read as a zip when its trace holds the read of the end-of-central-directory record:
22 bytes ending at the file's end (no other reader looks for a zip's end first). Its tensors
are its reads longer than the reader's 4 KiB buffer that end before the file's end (each
tensor's data is one such call; torch.load's other calls are 4 KiB or less, or read the central
directory up to the end; a tensor of less than 4 KiB is not seen). ``checkpoint.tensors_per_file`` gives them per file
of a rank's checkpoint in the format's order: for model_optimizer, a rank's smaller file (the
model, as fit_checkpoints takes it) first; each the median over the ranks' files. Without a
trace, or when not every file read back was read so, the pattern stays pieces and a note says
why.
"""

import numpy as np
from dlio_mpi.checkpoint.zip_reads import BUFFER, END_RECORDS


def _reads_of(trace, fid):
    rows = trace[trace["id"] == fid]
    return rows[rows["op"].astype(str) == "read"]


def _file_size(job, trace, fid):
    """The bytes the job wrote to file ``fid``: the end of its furthest write in the trace,
    else its POSIX records' bytes written."""
    rows = trace[(trace["id"] == fid) & (trace["op"].astype(str) == "write")]
    if len(rows):
        return int((rows["offset"] + rows["length"]).max())
    posix = job.records["POSIX"]
    return int(posix[posix["id"] == fid]["POSIX_BYTES_WRITTEN"].clip(lower=0).sum())


def zip_read(job, fid):
    """Whether the DXT trace shows file ``fid`` read as a zip: the end-of-central-directory
    record read, 22 bytes ending where the job's writes of it ended."""
    trace = (job.dxt_segments or {}).get("DXT_POSIX")
    if trace is None or trace.empty:
        return False
    reads = _reads_of(trace, fid)
    size = _file_size(job, trace, fid)
    return bool(size > 0 and ((reads["length"] == END_RECORDS[0])
                              & (reads["offset"] + reads["length"] == size)).any())


def zip_read_back(job, back, ck_format, notes, evidence):
    """The checkpoint keys of how the files ``back`` were read (module docstring): {} for
    pieces, and for a job that read none back."""
    if not back:
        return {}
    trace = (job.dxt_segments or {}).get("DXT_POSIX")
    if trace is None or trace.empty:
        notes.append("checkpoints read back: no DXT trace of the reads, read back in "
                     "checkpoint.transfer_size pieces")
        return {}
    per_rank, plain = {}, []
    for fid in sorted(back):
        reads = _reads_of(trace, fid)
        if not len(reads):
            plain.append(fid)
            continue
        size = _file_size(job, trace, fid)
        end_record = END_RECORDS[0]
        as_zip = ((reads["length"] == end_record)
                  & (reads["offset"] + reads["length"] == size)).any()
        if not as_zip:
            plain.append(fid)
            continue
        rank = int(reads["rank"].iloc[0])
        # the directory's reads end at the file's end and grow past the buffer with many
        # tensors: no tensor
        data = (reads["length"] > BUFFER) & (reads["offset"] + reads["length"] < size)
        per_rank.setdefault(rank, []).append((size, int(data.sum())))
    if plain or not per_rank:
        notes.append(f"checkpoints read back: {len(plain)} of {len(back)} files without "
                     "torch.load's end-of-zip read, read back in checkpoint.transfer_size "
                     "pieces")
        return {}
    # a rank's files of a checkpoint: model_optimizer's model and optimizer files; a rank
    # read back several checkpoints, each the same files: its files by size, the smaller
    # share the models'
    files = 2 if ck_format == "model_optimizer" else 1
    counts = [[] for _ in range(files)]
    for entries in per_rank.values():
        ordered = sorted(entries)
        for k in range(files):
            part = ordered[k * len(ordered) // files:(k + 1) * len(ordered) // files]
            counts[k] += [tensors for _, tensors in part]
    tensors = [max(int(round(float(np.median(c)))), 1) for c in counts if c]
    evidence["checkpoint_reads"] = {"pattern": "torch_zip", "tensors_per_file": tensors,
                                    "files": sum(len(v) for v in per_rank.values())}
    notes.append(f"checkpoints read back as torch.load reads a zip (4 KiB headers, the end "
                 f"records and central directory from the end, then each tensor in one call): "
                 f"checkpoint.read_pattern=torch_zip, tensors_per_file {tensors}")
    return {"read_pattern": "torch_zip", "tensors_per_file": tensors}
