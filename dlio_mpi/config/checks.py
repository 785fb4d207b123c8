"""Checks of a whole configuration, run by dlio_mpi.config.loader.load on every rank before any I/O
(names that become paths, impossible combinations) and before a run (what needs the job's
size): each problem is one ConfigError line naming the keys."""
from dlio_mpi import backends, formats
from dlio_mpi.config import io_checks
from dlio_mpi.config.errors import ConfigError
from dlio_mpi.config.schema import CHECKPOINT_ZIP_FORMATS as ZIP_FORMATS

# storage.storage_type values that name an object store, not a file system
OBJECT_STORES = ("s3", "aistore")
# configuration values that become a path component (a file name, or a part of one)
NAME_KEYS = (("dataset", "file_prefix"),)
# configuration values that are directories
FOLDER_KEYS = (("dataset", "data_folder"), ("checkpoint", "checkpoint_folder"),
               ("output", "folder"))


def check_names(cfg):
    """A name built into a file name stays inside its folder: no '/', no '..', not empty, no
    NUL byte; a folder is not empty and has no NUL byte."""
    for section, key in NAME_KEYS:
        value = getattr(getattr(cfg, section), key)
        if not value or "/" in value or ".." in value or "\0" in value:
            raise ConfigError(f"{section}.{key}={value!r}: a file name prefix must not be empty "
                              "or contain '/', '..' or a NUL byte (it names files inside their "
                              "folder)")
    for section, key in FOLDER_KEYS:
        value = getattr(getattr(cfg, section), key)
        if not value or "\0" in value:
            raise ConfigError(f"{section}.{key}={value!r}: a directory must not be empty or "
                              "contain a NUL byte")


def validate(cfg):
    """Impossible combinations, each one line."""
    if cfg.storage.storage_type in OBJECT_STORES:
        raise ConfigError(f"storage.storage_type={cfg.storage.storage_type}: object storage is "
                          "not emulated; this emulator reads and writes files through a file "
                          "system (storage_type local_fs or parallel_fs)")
    check_names(cfg)
    io, ds, rd = cfg.io, cfg.dataset, cfg.reader
    b = backends.of(cfg)
    if rd.odirect and not (b.library == backends.POSIX and not b.mapped):
        raise ConfigError(f"reader.odirect=true with io.interface={io.interface}: O_DIRECT "
                          "is a POSIX open flag (use io.interface=posix_direct)")
    fmt = formats.traits(ds.format)
    hdf5_if = b.library == backends.HDF5
    if fmt.rows and not hdf5_if and io.read_type == "on_demand":
        raise ConfigError(f"dataset.format={ds.format} is read through libhdf5: io.interface "
                          f"must be {backends.listed(lambda x: x.library == backends.HDF5)}, "
                          f"not {io.interface}")
    if hdf5_if and not fmt.rows:
        raise ConfigError(f"io.interface={io.interface} reads HDF5 files, but dataset.format="
                          f"{ds.format}")
    if b.collective and io.layout == "multi":
        raise ConfigError(f"io.interface={io.interface} is collective I/O on one shared file: "
                          "it needs io.layout=shared or replicated, not file-per-rank data "
                          "(io.layout=multi)")
    if io.layout != "multi" and ds.num_files_train != 1:
        raise ConfigError(f"io.layout={io.layout} is one shared file: dataset.num_files_train "
                          f"must be 1, not {ds.num_files_train}")
    if not 0.0 < ds.content_fill <= 1.0:
        raise ConfigError(f"dataset.content_fill={ds.content_fill}: the random share of a "
                          "page is above 0 and at most 1")
    if ds.compression != "none" and ds.compression not in fmt.compressions:
        raise ConfigError(f"dataset.compression={ds.compression} applies to "
                          f"{formats.listed(lambda t: ds.compression in t.compressions)}, "
                          f"not {ds.format}")
    if (cfg.reader.access == "parquet") != (fmt.access == "parquet"):
        raise ConfigError(f"reader.access={cfg.reader.access} with dataset.format={ds.format}: "
                          "reader.access=parquet reads Parquet files, and they are read so")
    if fmt.decoder and ds.num_samples_per_file != 1:
        raise ConfigError(f"dataset.format={ds.format} holds one image per file: "
                          "dataset.num_samples_per_file must be 1, not "
                          f"{ds.num_samples_per_file}")
    if fmt.decoder == "jpeg" and cfg.workflow.generate_data:
        import importlib.util
        if importlib.util.find_spec("PIL") is None:
            raise ConfigError("dataset.format=jpeg: generating JPEG files needs Pillow "
                              "(pip install pillow)")
    if io.rank_slice_us and not 100 <= io.rank_slice_us <= 100_000:
        raise ConfigError(f"io.rank_slice_us={io.rank_slice_us}: Linux takes time slices of "
                          "100 to 100000 us (0: the kernel's default)")
    if io.rank_priority > 99:
        raise ConfigError(f"io.rank_priority={io.rank_priority}: SCHED_FIFO priorities are "
                          "1 to 99 (0: the thread's own policy)")
    _check_checkpoint_calls(cfg.checkpoint)
    io_checks.validate_access(cfg)
    io_checks.validate_volumes(cfg)
    io_checks.validate_fields(cfg)
    from dlio_mpi.data import write_phase
    write_phase.check(cfg)
    if fmt.chunked and ds.chunk_size:
        if not (ds.enable_chunking or ds.compression != "none"):
            raise ConfigError(f"dataset.chunk_size={ds.chunk_size} with a contiguous HDF5 "
                              "dataset: set dataset.enable_chunking=true (or compression)")
        from dlio_mpi.data.dataset import chunking
        try:
            chunking(ds)
        except ValueError as e:
            raise ConfigError(str(e)) from None
    if (ds.compression != "none" or not fmt.aligned) and b.direct:
        raise ConfigError(f"io.interface=posix_direct cannot read {ds.format} "
                          f"{'compressed ' if ds.compression != 'none' else ''}data in aligned "
                          "byte ranges")


def _check_checkpoint_calls(ck):
    from dlio_mpi.run.oplog_format import CHECKPOINT_FILES
    if ck.files_per_rank != 1 and (ck.format != "file_per_rank"
                                   or ck.files_per_rank > CHECKPOINT_FILES):
        raise ConfigError(f"checkpoint.files_per_rank={ck.files_per_rank}: checkpoint.format "
                          f"file_per_rank takes 1 to {CHECKPOINT_FILES} files a writer, "
                          f"{ck.format} its own")
    if ck.write_pattern != "pieces" and (ck.format != "file_per_rank" or ck.odirect):
        raise ConfigError(f"checkpoint.write_pattern={ck.write_pattern} writes a buffered "
                          "file a writer through a C stream: it needs "
                          "checkpoint.format=file_per_rank without checkpoint.odirect")
    if ck.writer_first != 0 and ck.writers != "strided":
        raise ConfigError(f"checkpoint.writer_first={ck.writer_first} is the first rank of "
                          f"checkpoint.writers=strided, not checkpoint.writers={ck.writers}")
    if ck.writer_stride != 1 and ck.writers != "strided":
        raise ConfigError(f"checkpoint.writer_stride={ck.writer_stride} is the stride of "
                          f"checkpoint.writers=strided, not checkpoint.writers={ck.writers}")
    if not ck.collective and ck.format not in ("mpiio", "hdf5"):
        raise ConfigError(f"checkpoint.collective=false makes the calls of the shared formats "
                          f"(mpiio, hdf5) independent: not checkpoint.format={ck.format}")
    counts = ck.tensors_per_file
    if not isinstance(counts, list) or \
            not all(isinstance(t, int) and not isinstance(t, bool) and t > 0 for t in counts):
        raise ConfigError(f"checkpoint.tensors_per_file={counts!r}: a list of positive tensor "
                          "counts, one per file of a rank's checkpoint")
    if ck.read_pattern != "torch_zip":
        return
    if ck.format not in ZIP_FORMATS or ck.odirect:
        raise ConfigError(f"checkpoint.read_pattern=torch_zip reads buffered files of "
                          f"checkpoint.format {' or '.join(ZIP_FORMATS)}, not "
                          f"{ck.format}{' with checkpoint.odirect=true' if ck.odirect else ''}")


def check_ranks(cfg, ranks):
    """Checks that need the job's size, run on every rank before any I/O."""
    k = cfg.reader.reading_ranks
    if k > ranks:
        raise ConfigError(f"reader.reading_ranks={k} is more than the job's {ranks} ranks")
    if 0 < k < ranks:
        rd, wf = cfg.reader, cfg.workflow
        other = ("reader.access=stream" if rd.access == "stream" else
                 "reader.epoch_overrun" if rd.epoch_overrun else
                 "io.write_each_epoch" if cfg.io.write_each_epoch else
                 "an evaluation phase" if wf.evaluation and cfg.dataset.num_files_eval > 0
                 else None)
        if other:
            raise ConfigError(f"reader.reading_ranks={k} does not combine with {other}: "
                              "every rank reads there")
    if cfg.checkpoint.writers == "strided" and cfg.checkpoint.writer_first >= ranks:
        raise ConfigError(f"checkpoint.writer_first={cfg.checkpoint.writer_first} is not one "
                          f"of the {ranks} ranks")
    if 0 < k < ranks:
        ranks = k       # the shares below are the reading ranks'
    if cfg.reader.access == "stream":
        ds = cfg.dataset
        if ds.num_files_train < ranks:
            raise ConfigError(
                f"reader.access=stream splits files among ranks: dataset.num_files_train="
                f"{ds.num_files_train} is fewer than the {ranks} ranks"
                + (" (reader.data_loader=tensorflow reads TFRecord files as a stream; "
                   "reader.access=sample reads them by sample)"
                   if cfg.reader.data_loader == "tensorflow" else ""))
        from dlio_mpi.readers import access
        if access.stream_steps(ds.num_files_train, ds.num_samples_per_file, ranks,
                               cfg.reader.batch_size) == 0:
            raise ConfigError(
                f"reader.batch_size={cfg.reader.batch_size} is larger than a rank's files hold "
                f"({ds.num_files_train // ranks} files of {ds.num_samples_per_file} samples on "
                f"{ranks} ranks)")
        return
    per_rank = cfg.num_samples // ranks if cfg.io.layout != "replicated" else cfg.num_samples
    if cfg.reader.batch_size > per_rank:
        raise ConfigError(
            f"reader.batch_size={cfg.reader.batch_size} is larger than a rank's share of the "
            f"dataset ({per_rank} samples of {cfg.num_samples} on {ranks} ranks)")
    if cfg.reader.shuffle_window % ranks:
        raise ConfigError(f"reader.shuffle_window={cfg.reader.shuffle_window} deals each "
                          f"window to the ranks: the {ranks} ranks must divide it")
    k = cfg.reader.sharding_block
    if k > 1:
        from dlio_mpi.data import sampler
        rd, io = cfg.reader, cfg.io
        read = sampler.steps_per_epoch(cfg.num_samples, ranks, rd.batch_size, io.remainder,
                                       io.layout, io.read_type) * rd.batch_size
        if read % k:
            raise ConfigError(
                f"reader.sharding_block={k} does not divide the {read} samples a rank reads "
                f"an epoch ({ranks} ranks, reader.batch_size {rd.batch_size}): every rank "
                "takes whole blocks")
