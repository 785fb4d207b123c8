"""Check a Darshan log's region map against the file's size before darshan-util reads it.

A Darshan log is an uncompressed header followed by compressed regions (job data, file names,
one region per module); the header lists each region's offset and length. darshan-util does not
check those against the file: reading a region that a truncation cut short can crash the
process (a segmentation fault or a failed assertion, varying from run to run), which no
exception handler can catch. This check reads the header itself and rejects such a file first.

Corrupt bytes inside a region are not safe either: darshan-util inflates what it can and then
trusts the record counts, sizes and names it finds, which can fail an assertion (an abort), or
make PyDarshan try to allocate terabytes. Every region is therefore inflated here first, in
small pieces that are thrown away: a region must be whole compressed streams (one per rank
that wrote it, each with its checksum) that fill its length exactly.

Header layout, as the log formats 3.00 to 3.41 write it: an 8-byte version string, the 64-bit
magic number (its byte order is the log's), the compression type (byte 16: 0 zlib, 1 bzip2,
2 none), then, at an offset that depends on the version, a (offset, length) pair of 64-bit
integers for the name region followed by one pair per module slot, then a 32-bit version per
module slot. The job region runs from the end of the header to the first region. Versions this
module does not know are left to darshan-util.
"""

import bz2
import struct
import zlib

from dlio_mpi_analysis.errors import LogError

MAGIC_NUMBER = 0x643537
# format version -> (offset of the name-region pair, number of module slots after it)
REGION_MAPS = {"3.00": (24, 16), "3.10": (24, 16), "3.20": (24, 16), "3.21": (24, 16),
               "3.41": (32, 64)}
ZLIB, BZIP2, NO_COMPRESSION = 0, 1, 2
CHUNK = 1 << 20  # compressed bytes handed to the decompressor at a time
INFLATE_LIMIT = 1 << 20  # inflated bytes produced per decompressor call (then discarded)


def check_regions(path):
    """Raise LogError if a region the header of ``path`` lists reaches past the file's end,
    overlaps the header, or is not whole compressed streams.

    Files too short for a header, with an unknown version or without the magic number pass:
    darshan-util refuses those cleanly itself.
    """
    with open(path, "rb") as f:
        data = f.read(32 + 16 * 65)
        f.seek(0, 2)
        size = f.tell()
    version = data[:8].split(b"\0")[0].decode("ascii", errors="replace")
    if version not in REGION_MAPS or len(data) < 16:
        return
    order = next((o for o in "<>" if struct.unpack_from(o + "Q", data, 8)[0] == MAGIC_NUMBER),
                 None)
    first, slots = REGION_MAPS[version]
    if order is None or len(data) < first + 16 * (slots + 1):
        return
    regions = []
    for slot in range(slots + 1):
        offset, length = struct.unpack_from(order + "QQ", data, first + 16 * slot)
        if length and offset + length > size:
            raise LogError(f"{path}: truncated or corrupt: a region of the log ends at byte "
                           f"{offset + length} but the file holds {size} bytes")
        if length:
            regions.append((offset, length, "name" if slot == 0 else f"module {slot - 1}"))
    header_end = first + 16 * (slots + 1) + 4 * slots
    for offset, length, what in regions:
        if offset < header_end:
            raise LogError(f"{path}: corrupt: the {what} region starts at byte {offset}, "
                           f"inside the {header_end}-byte header")
    job_end = min((offset for offset, _, _ in regions), default=size)
    regions.insert(0, (header_end, job_end - header_end, "job"))
    compression = data[16]
    if compression not in (ZLIB, BZIP2):
        return
    with open(path, "rb") as f:
        for offset, length, what in regions:
            why = _inflate_error(f, offset, length, compression)
            if why:
                raise LogError(f"{path}: corrupt: the {what} region (bytes {offset} to "
                               f"{offset + length}) does not decompress: {why}")


def _inflate_error(f, offset, length, compression):
    """Why the ``length`` bytes at ``offset`` are not whole compressed streams, or None.

    Inflates in bounded pieces and keeps nothing, so a region that inflates to a huge size
    costs time in proportion to it but no memory."""
    if length == 0:
        return "the region is empty"
    f.seek(offset)
    left = length
    pending = b""
    stream = None
    while left or pending:
        if not pending:
            pending = f.read(min(CHUNK, left))
            if not pending:
                return "the file ends inside it"
            left -= len(pending)
        if stream is None:
            stream = zlib.decompressobj() if compression == ZLIB else bz2.BZ2Decompressor()
        try:
            if compression == ZLIB:
                stream.decompress(pending, INFLATE_LIMIT)
                pending = stream.unconsumed_tail
                while stream.unconsumed_tail and not stream.eof:
                    stream.decompress(stream.unconsumed_tail, INFLATE_LIMIT)
                    pending = stream.unconsumed_tail
                if stream.eof:
                    pending = stream.unused_data
            else:
                stream.decompress(pending, INFLATE_LIMIT)
                pending = b""
                while not stream.eof and not stream.needs_input:
                    stream.decompress(b"", INFLATE_LIMIT)
                if stream.eof:
                    pending = stream.unused_data
        except (zlib.error, OSError, EOFError, ValueError) as error:
            return " ".join(str(error).split()) or type(error).__name__
        if stream.eof:
            stream = None
    if stream is not None:
        return "a compressed stream is cut short"
    return None
