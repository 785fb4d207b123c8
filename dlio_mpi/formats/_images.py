"""What the image formats (jpeg, png) share: a file is one sample, a square greyscale image of
8-bit pixels whose side is the square root of the sample's size (dataset.record_length is the
decoded image's bytes, as the DLIO benchmark's jpeg and png generators take it), filled with
the sample's seeded content; and the side an image of those pixels needs for its file to have
a given size (the fit's question: a log shows the files' sizes, not the pixels)."""
import math

import numpy as np

from dlio_mpi.formats import content


def side_of(nbytes):
    """The side of the square image of about nbytes pixels (at least 1)."""
    return max(1, int(round(math.sqrt(max(int(nbytes), 1)))))


def square(nbytes):
    """nbytes rounded to a whole square image's pixels (int64 array or int)."""
    side = np.maximum(np.rint(np.sqrt(np.maximum(nbytes, 1))), 1).astype(np.int64)
    return side * side


def pixels(spec, file_index):
    """The image of file file_index: a (side, side) uint8 array of its sample's content."""
    n = int(content.sample_sizes(spec, file_index)[0])
    side = side_of(n)
    return content.sample_content(spec.content, file_index, 0, side * side).reshape(side, side)


def noise_image(side, seed=0, fill=1.0):
    """A side x side image of seeded content, as the dataset's files hold (for sizing); with
    fill < 1, content of that random share (dataset.content_fill)."""
    source = seed if fill >= 1.0 else content.Content(seed, fill)
    return content.sample_content(source, 0, 0, side * side).reshape(side, side)


def side_for_file_bytes(file_bytes, encoded_bytes):
    """The side whose image's file (encoded_bytes(side) -> bytes of the file) comes nearest
    to file_bytes: a bisection over sides (a file grows with its side)."""
    lo, hi = 1, 2
    while encoded_bytes(hi) < file_bytes:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if encoded_bytes(mid) < file_bytes:
            lo = mid
        else:
            hi = mid
    return min((lo, hi), key=lambda s: abs(encoded_bytes(s) - file_bytes))
