"""Dataset generation, in parallel over ranks: each file written by exactly one rank (files
dealt round-robin), or one shared HDF5 file written collectively by all.

A file appears under its final name only when complete (written to a temporary name, then
renamed); a rerun checks the files that are there (size from the format's layout, or the file's
own headers) and rewrites only the missing or damaged ones. Rank 0 writes the manifest last, so a
dataset with a manifest is whole; readers take the file names from the manifest's pattern and
never list the directory."""
import json
import os
import re

from dlio_mpi import collective, formats, sysinfo
from dlio_mpi.dataset import Dataset

MANIFEST = "manifest.json"


def manifest_for(cfg):
    d = Dataset(cfg)
    spec = d.spec
    return {
        "format": spec.format,
        "num_files": d.num_files,
        "samples_per_file": d.spf,
        "record_length": spec.record_length,
        "record_length_stdev": spec.record_length_stdev,
        "seed": spec.seed,
        "compression": spec.compression,
        "chunked": spec.chunked,
        "chunk_rows": spec.chunk_rows,
        "chunk_elems": spec.chunk_elems,
        "hdf5_libver": spec.libver,
        "npz_layout": spec.npz_layout,
        "volume_shape": list(spec.volume_shape),
        "crop_shape": list(spec.crop_shape),
        "volumes": [list(v[:2]) + [list(v[2])] + list(v[3:]) for v in spec.volumes],
        "files": d.name(0).replace("0000000", "{index:07d}"),
        "subfolders": d.subfolders,
        "num_files_eval": cfg.dataset.num_files_eval,
        "subfolders_eval": cfg.dataset.num_subfolders_eval,
    }


def read_manifest(data_dir):
    path = os.path.join(data_dir, MANIFEST)
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise RuntimeError(f"cannot read the dataset manifest {path}: {e}") from None


def _complete(d, i):
    """Whether file i is there, whole and of this dataset."""
    path = d.path(i)
    if not os.path.exists(path):
        return False
    try:
        want = formats.layout(d.spec, i).file_size
        return os.stat(path).st_size == want
    except ValueError:
        pass
    try:
        formats.index_file(path, d.spec, i)
        return True
    except (formats.FormatError, OSError, ValueError):
        return False


def check(cfg, comm):
    """Every file of the dataset checked against its format, each by one rank (headers, sample
    count and sizes; TFRecord CRCs of every record). Raises RuntimeError with the first
    problem, on every rank."""
    rank, size = comm.Get_rank(), comm.Get_size()
    error = None
    splits = [Dataset(cfg)] + ([Dataset(cfg, "valid")] if cfg.dataset.num_files_eval else [])
    try:
        for d in splits:
            for i in range(rank, d.num_files, size):
                kw = {"check_data": True} if d.spec.format == "tfrecord" else {}
                idx = formats.index_file(d.path(i), d.spec, i, **kw)
                try:
                    want = formats.layout(d.spec, i).file_size
                except ValueError:
                    want = idx.file_size
                if idx.file_size != want:
                    raise formats.FormatError(d.path(i), f"{idx.file_size} bytes, expected "
                                                         f"{want}")
    except (formats.FormatError, ValueError) as e:
        error = f"rank {rank}: dataset check: {e}"
    except OSError as e:
        error = f"rank {rank}: dataset check: {e.filename}: {e.strerror}"
    _agree(comm, error)


def _agree(comm, error):
    collective.agree(comm, error)


def generate(cfg, comm):
    """Write the dataset of cfg on every rank of comm (collective). Returns the number of files
    this rank wrote."""
    rank = comm.Get_rank()
    splits = [Dataset(cfg)] + ([Dataset(cfg, "valid")] if cfg.dataset.num_files_eval else [])
    root = cfg.dataset.data_folder
    want = manifest_for(cfg)
    error = None
    if rank == 0:
        try:
            for d in splits:
                for sub in d.directories():
                    os.makedirs(sub, exist_ok=True)
            have = read_manifest(root)
            if have is not None and have != want:
                os.unlink(os.path.join(root, MANIFEST))     # a different dataset
        except (OSError, RuntimeError) as e:
            error = f"rank 0: cannot prepare {root}: {e}"
    _agree(comm, error)
    written = sum(_generate_split(d, cfg, comm) for d in splits)
    if rank == 0:
        write_manifest(cfg)
    comm.Barrier()
    return written


def write_manifest(cfg):
    """The dataset's manifest, written whole or not at all (on one rank, once its files are
    complete)."""
    path = os.path.join(cfg.dataset.data_folder, MANIFEST)
    with open(path + ".part", "w") as f:
        json.dump(manifest_for(cfg), f, indent=1)
    os.replace(path + ".part", path)


def _generate_split(d, cfg, comm):
    """The files of one split; returns how many this rank wrote."""
    rank, size = comm.Get_rank(), comm.Get_size()
    if d.spec.format == "hdf5" and cfg.io.layout != "multi":
        return _shared_hdf5(d, comm)
    written, error = 0, None
    try:
        for i in range(rank, d.num_files, size):
            if _complete(d, i):
                continue
            final = d.path(i)
            tmp = f"{final}.part.{rank}"
            try:
                formats.write_file(tmp, i, d.spec)
                _sync(tmp)
            except BaseException:
                _remove(tmp)            # nothing half-written is left behind
                raise
            os.replace(tmp, final)
            written += 1
    except OSError as e:
        where = e.filename or d.root
        error = f"rank {rank}: generating {where}: {e.strerror}"
    except ValueError as e:
        error = f"rank {rank}: generating {d.root}: {e}"
    _agree(comm, error)
    return written


def _remove(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _sync(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _shared_hdf5(d, comm):
    """The one HDF5 file, written by all ranks together; renamed by rank 0 when whole."""
    rank = comm.Get_rank()
    done = _complete(d, 0) if rank == 0 else None
    if comm.bcast(done, root=0):
        return 0
    final = d.path(0)
    tmp = f"{final}.part"
    # the room is checked before the collective writes: a write failing on one rank inside
    # HDF5's collective calls cannot always be recovered (the samples' bytes: a lower bound)
    error = sysinfo.space_error(os.path.dirname(final), d.total_bytes(),
                                f"rank 0: generating {final}") if rank == 0 else None
    _agree(comm, error)
    try:
        formats.write_file(tmp, 0, d.spec, comm=comm)
    except (OSError, ValueError, RuntimeError) as e:
        text = " ".join(str(e).split())
        # an error the ranks agreed on already names the rank it happened on
        error = text if re.match(r"rank \d+: ", text) else \
            f"rank {rank}: generating {final}: {text}"
    try:
        _agree(comm, error)
    except RuntimeError:
        if rank == 0:
            _remove(tmp)
        raise
    if rank == 0:
        _sync(tmp)
        os.replace(tmp, final)
    comm.Barrier()
    return 1 if rank == 0 else 0
