"""What the rest of the emulator asks of a dataset format: each format module carries one
FormatTraits (its TRAITS), so that config checks, generation, the write phase, the dataset, the
readers and the fit ask the format instead of comparing its name. Adding a format is one module
with its TRAITS (and its writer, index and sample functions)."""
from dataclasses import dataclass


@dataclass(frozen=True)
class FormatTraits:
    """name          dataset.format
    extension        of its files
    library          the library its real readers read it through: "hdf5" (libhdf5, a
                     sample a row of a dataset), or None (byte ranges of the file)
    compressions     dataset.compression values it takes besides none
    aligned          O_DIRECT can read its samples in aligned byte ranges
    written_first    io.write_first writes its files in place, as a write-then-read
                     benchmark does
    index_computed   a file's index is computed from the spec (no I/O)
    index_logged     reading a file's index (its headers) is part of the run's reads
    index_checks_data  the index check can verify every record's content (checksums)
    numpy_load       numpy.load reads its files (reader.access=numpy)
    numpy_fromfile   numpy.load reads its array with C stdio after the header (one array per
                     file, .npy)
    records          its files are a stream of framed records that TensorFlow's record
                     reader reads (the DLIO benchmark's TensorFlow data loader)
    opaque           a sample is bare bytes with no framing (an image file, raw records)
    chunked          its samples may be stored chunked (dataset.chunk_size)
    decoder          the image decoder (PIL's plugin) whose reads reader.access=image issues:
                     "jpeg" (the header's buffer fill, then 64 KiB requests to the end) or
                     "png" (chunk by chunk: numpy_reads.png_reads); None for other formats
                     (read as the jpeg decoder reads a file)
    companions       extensions of the files written beside each of its files (an index), named
                     as the file with its extension replaced
    mapped           its application reads samples out of a memory mapping of the file
                     (io.interface=mmap unless one is given)
    access           the reader.access its library's reads need (its default), or None
    streamed         its real readers stream its files front to back in blocks (TensorFlow's
                     record reader, pandas' csv reader), whatever the samples
    framing          bytes its files hold per sample beyond the sample's own (a record's
                     header and checksum; an npz member's zip and npy headers)
    field_bytes      a sample is a whole number of fields of this many bytes
    row_groups       its samples lie in row groups, a group's column read in one call after
                     the file's footer (pyarrow's Parquet)"""
    name: str
    extension: str
    library: str = None
    compressions: tuple = ()
    aligned: bool = True
    written_first: bool = False
    index_computed: bool = False
    index_logged: bool = False
    index_checks_data: bool = False
    numpy_load: bool = False
    numpy_fromfile: bool = False
    records: bool = False
    opaque: bool = False
    chunked: bool = False
    decoder: str = None
    companions: tuple = ()
    mapped: bool = False
    access: str = None
    streamed: bool = False
    framing: int = 0
    field_bytes: int = 1
    row_groups: bool = False

    @property
    def rows(self):
        """A sample is a row of an HDF5 dataset, read through libhdf5."""
        return self.library == "hdf5"

    @property
    def byte_ranges(self):
        """A sample is a byte range of its file (read as a stream or by ranges)."""
        return self.library is None
