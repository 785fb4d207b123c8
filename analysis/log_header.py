"""Check a Darshan log's region map against the file's size before darshan-util reads it.

A Darshan log is an uncompressed header followed by compressed regions (job data, file names,
one region per module); the header lists each region's offset and length. darshan-util does not
check those against the file: reading a region that a truncation cut short can crash the
process (a segmentation fault or a failed assertion, varying from run to run), which no
exception handler can catch. This check reads the header itself and rejects such a file first.

Header layout, as the log formats 3.00 to 3.41 write it: an 8-byte version string, the 64-bit
magic number (its byte order is the log's), then, at an offset that depends on the version, a
(offset, length) pair of 64-bit integers for the name region followed by one pair per module
slot. Versions this module does not know are left to darshan-util.
"""

import struct

from .errors import LogError

MAGIC_NUMBER = 0x643537
# format version -> (offset of the name-region pair, number of module slots after it)
REGION_MAPS = {"3.00": (24, 16), "3.10": (24, 16), "3.20": (24, 16), "3.21": (24, 16),
               "3.41": (32, 64)}


def check_regions(path):
    """Raise LogError if a region the header of ``path`` lists reaches past the file's end.

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
    for slot in range(slots + 1):
        offset, length = struct.unpack_from(order + "QQ", data, first + 16 * slot)
        if length and offset + length > size:
            raise LogError(f"{path}: truncated: a region of the log ends at byte "
                           f"{offset + length} but the file holds {size} bytes")
