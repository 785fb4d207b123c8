"""The read calls torch.load makes on a checkpoint file, which torch.save stores as a zip of
the pickled object and one member per tensor (checkpoint.read_pattern=torch_zip).

torch.load's zip reader (PyTorch 2, through a 4 KiB-buffered stream) reads, as Darshan's DXT
traces of the DLIO benchmark's checkpoint reads show:

1. 4 KiB at offset 0, twice (the magic, the first local header);
2. the end of the file: 4 KiB, then the end-of-central-directory record (22 B), its zip64
   locator (42 B from the end) and the zip64 record (98 B from the end);
3. the central directory three times, each read ending at the file's end and reaching
   further back (166 and 296 bytes in the traces: the extra fields of its entries);
4. 4 KiB just after the pickled object (the records that follow it);
5. every tensor in turn: 4 KiB at its local header, then the rest of its data in one call,
   up to the member's 16-byte data descriptor, which is not read (the first tensor's header
   read is the one at offset 0, the pickle in that buffer);
6. the tail, from the last tensor's end to the file's end (the DLIO benchmark's checkpoint
   loads; a sample file's torch.load, as a data loader's Dataset makes it, ends with its last
   tensor: strace of torch 2.13 loading files of one and of four tensors, and the
   torch_load_samples log).

The file's tensors are equal shares of its bytes before the directory; the pickle and the
directory grow with the tensor count as in the traces (about 87 and 94 bytes a tensor).
"""

BUFFER = 4096
END_RECORDS = (22, 42, 98)         # end of central directory, zip64 locator, zip64 record
DIRECTORY_REREADS = (0, 166, 296)  # how much further back each directory read reaches
MEMBERS_BESIDE_TENSORS = 4         # data.pkl, byteorder, version, .data/serialization_id
DIRECTORY_ENTRY = 94               # bytes of a member's central directory entry
PICKLE_BASE, PICKLE_PER_TENSOR = 291, 87
DESCRIPTOR = 16                    # a member's data descriptor after its data, never read


def torch_load_reads(size, tensors, tail=True):
    """[(offset, length), ...] of torch.load's read calls on a file of ``size`` bytes holding
    ``tensors`` tensors (module docstring), each call within the file and of at least a byte;
    without ``tail``, no read of the tail after the last tensor."""
    if size <= 0:
        return []
    tensors = max(int(tensors), 1)
    directory = END_RECORDS[-1] + DIRECTORY_ENTRY * (tensors + MEMBERS_BESIDE_TENSORS)
    tail_bytes = min(directory + DIRECTORY_REREADS[-1], size)
    pickle = PICKLE_BASE + PICKLE_PER_TENSOR * tensors
    calls = [(0, BUFFER), (0, BUFFER), (size - BUFFER, BUFFER)]
    calls += [(size - n, n) for n in END_RECORDS]
    calls += [(size - directory - more, directory + more) for more in DIRECTORY_REREADS]
    calls.append((pickle, BUFFER))
    body = size - tail_bytes
    for i in range(tensors):
        start, end = body * i // tensors, body * (i + 1) // tensors
        calls.append((start, min(BUFFER, end - start)))
        calls.append((start + BUFFER, end - start - BUFFER - DESCRIPTOR))
    if tail:
        calls.append((body, size - body))
    return _within(calls, size)


def _within(calls, size):
    """The calls cut to the file's bytes, those left without a byte dropped."""
    out = []
    for offset, length in calls:
        lo, hi = max(offset, 0), min(offset + length, size)
        if hi > lo:
            out.append((lo, hi - lo))
    return out
