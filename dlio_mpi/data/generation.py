"""Dataset generation, in parallel over ranks: each file written by exactly one rank (files
dealt round-robin), or one shared HDF5 file written collectively by all.

A file appears under its final name only when complete (written to a temporary name, then
renamed); a rerun checks the files that are there (size from the format's layout, or the file's
own headers) and rewrites only the missing or damaged ones. Before any file is written, rank 0
checks that the file system has room for the dataset and every rank that its host has the memory
a file's writing holds, then writes the manifest marked in progress (with the directories it
made), so that clean can remove a partial dataset and a run refuses it; the manifest is marked
complete when every file is. A manifest without a state (written by earlier versions, last) is
complete. Readers compute the file names and never list the directory; a manifest naming a path
outside the data folder is refused."""
import json
import os
import re

from dlio_mpi import formats
from dlio_mpi.run import collective
from dlio_mpi.files import folder_lock
from dlio_mpi.run import progress
from dlio_mpi.files import safe_files
from dlio_mpi.run import sysinfo
from dlio_mpi.data.dataset import Dataset
from dlio_mpi.files.nearest_folder import existing_folder

MANIFEST = "manifest.json"
# the lock of a generation in progress (one at a time per data folder), and this process's
GENERATING = ".dlio_mpi_generating.lock"
_generating = []
IN_PROGRESS, COMPLETE = "in_progress", "complete"
BOOKKEEPING = ("state", "made_dirs")     # manifest keys that do not describe the dataset


class ManifestError(RuntimeError):
    """A manifest that cannot be read or names a path outside its data folder (one line)."""


def inside(path, folder):
    """Whether path resolves (symbolic links followed) to folder or below it."""
    real, top = os.path.realpath(path), os.path.realpath(folder)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def splits(cfg):
    return [Dataset(cfg)] + ([Dataset(cfg, "valid")] if cfg.dataset.num_files_eval else [])


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
        **({"volume_files": list(spec.volume_files)} if spec.volume_files else {}),
        "files": d.name(0).replace("0000000", "{index:07d}"),
        "subfolders": d.subfolders,
        "num_files_eval": cfg.dataset.num_files_eval,
        "subfolders_eval": cfg.dataset.num_subfolders_eval,
        **({"content_fill": spec.content_fill} if spec.content_fill < 1.0 else {}),
    }


def load_manifest(data_dir):
    """The manifest in data_dir as written (None if there is none); ManifestError when it
    cannot be read, or when a path it names (its files, the directories it made) does not
    resolve inside data_dir."""
    path = os.path.join(data_dir, MANIFEST)
    try:
        with open(path) as f:
            m = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise ManifestError(f"cannot read the dataset manifest {path}: {e}") from None
    if not isinstance(m, dict):
        raise ManifestError(f"cannot read the dataset manifest {path}: not a JSON object")
    names = []
    if "files" in m:
        try:
            names.append(m["files"].format(index=0))
        except (AttributeError, KeyError, IndexError, ValueError):
            raise ManifestError(f"the dataset manifest {path} has a bad file pattern "
                                f"{m['files']!r}") from None
    made = m.get("made_dirs", [])
    if not isinstance(made, list) or not all(isinstance(d, str) for d in made):
        raise ManifestError(f"the dataset manifest {path} has a bad made_dirs {made!r}")
    for name in names + made:
        if "\0" in name or os.path.isabs(name) or not inside(os.path.join(data_dir, name),
                                                              data_dir):
            raise ManifestError(f"the dataset manifest {path} names {name!r}, outside "
                                f"{data_dir}: refused")
    if m.get("state", COMPLETE) not in (IN_PROGRESS, COMPLETE):
        raise ManifestError(f"the dataset manifest {path} has an unknown state "
                            f"{m['state']!r}")
    return m


def description(m):
    """The dataset a manifest describes (what manifest_for gives), without its bookkeeping."""
    return None if m is None else {k: v for k, v in m.items() if k not in BOOKKEEPING}


def in_progress(m):
    return m is not None and m.get("state", COMPLETE) == IN_PROGRESS


def read_manifest(data_dir):
    """The dataset the manifest in data_dir describes, or None."""
    return description(load_manifest(data_dir))


def _complete(d, i):
    """Whether file i is there (with its companion files), whole and of this dataset."""
    path = d.path(i)
    if not all(os.path.exists(p) for p in formats.file_paths(d.spec, path)):
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
    try:
        for d in splits(cfg):
            for i in range(rank, d.num_files, size):
                kw = {"check_data": True} if d.traits.index_checks_data else {}
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
    collective.agree(comm, error)


def generate(cfg, comm, say=False):
    """Write the dataset of cfg on every rank of comm (collective). Returns the number of files
    this rank wrote. With say, rank 0 says what it generates and how far it is (progress)."""
    rank = comm.Get_rank()
    parts = splits(cfg)
    root = cfg.dataset.data_folder
    collective.agree(comm, memory_error(cfg, comm,
                                        max(formats.write_memory(d.spec) for d in parts)))
    error = None
    if rank == 0:
        try:
            error = room_error(cfg) or begin(cfg)
        except (OSError, ManifestError) as e:
            error = f"rank 0: cannot prepare {root}: {error_text(e)}"
    tracker = None
    written = 0
    try:
        collective.agree(comm, error)
        if say and rank == 0:
            total = sum(d.num_files for d in parts)
            progress.log.info(f"generating the dataset in {root}: {total} files "
                              f"({cfg.dataset.format}) on {comm.Get_size()} ranks")
            # rank 0's files times the ranks: every rank writes as many files, give or take one
            tracker = progress.Tracker("generating", total, "files")
        for d in parts:
            written += _generate_split(d, cfg, comm, tracker, written)
        if rank == 0:
            write_manifest(cfg)
    finally:
        if tracker:
            tracker.close()
        if rank == 0:
            end()
    comm.Barrier()
    return written


def end():
    """Rank 0, once the dataset's files are written (or failed): the lock :func:`begin` took
    given back."""
    if _generating:
        folder_lock.release(*_generating)
        _generating.clear()


def error_text(e):
    if isinstance(e, OSError) and e.strerror:
        return f"{e.filename}: {e.strerror}" if e.filename else e.strerror
    return str(e)



def dataset_entries(d):
    """(path, file number, final) of every file in d's directories named as one of d's files
    or as its temporary name during generation (final False): what is on disk, found by
    listing, so as many as there are, whatever the configured count."""
    ext = "(?:" + "|".join(re.escape(e) for e in (d.ext,) + d.traits.companions) + ")"
    # a companion file of HDF5 volumes has its key before the extension
    keys = "|".join(re.escape(k) for k in dict.fromkeys(d.spec.volume_files) if k)
    key = rf"(?:\.(?:{keys}))?" if keys else ""
    pat = re.compile(rf"^{re.escape(d.prefix)}_(\d{{7,}})_of_{d.num_files}{key}{ext}"
                     rf"(\.part(?:\.\d+)?)?$")
    for k, sub in enumerate(d.directories()):
        try:
            entries = list(os.scandir(sub))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for e in entries:
            m = pat.match(e.name)
            if not m:
                continue
            i = int(m.group(1))
            if f"{i:07d}" != m.group(1) or i >= d.num_files or \
                    (d.subfolders > 0 and i % d.subfolders != k):
                continue
            yield e.path, i, m.group(2) is None


def room_error(cfg):
    """Rank 0, before generation: one line when the data folder's file system has less room
    (bytes, or inodes where it counts them) than the dataset's files not there yet need, at
    their mean sizes rounded up to whole blocks; else None."""
    root = cfg.dataset.data_folder
    where = existing_folder(root)
    try:
        st = os.statvfs(where)
    except OSError:
        return None
    block = st.f_frsize or st.f_bsize or 4096
    need_bytes = need_files = 0
    for d in splits(cfg):
        per_file = -(-(d.spf * d.cfg.dataset.record_length) // block) * block
        present = [p for p, _, final in dataset_entries(d) if final]
        there = 0
        for p in present:
            try:
                there += os.stat(p).st_blocks * 512
            except OSError:
                pass
        need_bytes += max(0, d.num_files * per_file - there)
        need_files += max(0, d.num_files - len(present))
    error = sysinfo.space_error(where, need_bytes, f"rank 0: generating {root}")
    if error is None and st.f_files and need_files > st.f_favail:
        error = (f"rank 0: generating {root}: No space left on device: {where} has "
                 f"{st.f_favail} free inodes, {need_files} files needed")
    return error


def memory_error(cfg, comm, need):
    """Collective: this rank's line when the ranks of its host together would hold more
    memory than the host has available (MemAvailable) while each holds need bytes (a file
    being written, at least one whole sample); else None."""
    from mpi4py import MPI

    local = comm.Split_type(MPI.COMM_TYPE_SHARED)
    ranks = local.Get_size()
    local.Free()
    avail = sysinfo.available_memory_bytes()
    if not avail or need * ranks <= avail:
        return None
    ds = cfg.dataset
    return (f"rank {comm.Get_rank()}: generating {ds.data_folder}: not enough memory: writing "
            f"a file of dataset.format={ds.format} (dataset.record_length={ds.record_length}, "
            f"{ds.num_samples_per_file} samples per file) holds {need} bytes at once per rank "
            f"({ranks} rank{'s' if ranks > 1 else ''} on this host: {need * ranks} bytes), and "
            f"{avail} bytes are available")


def begin(cfg):
    """Rank 0, before any file of the dataset is written: its directories made (each must
    resolve inside the data folder) and the manifest written marked in progress, with the
    directories made for it (by this and earlier generations). Returns an error line or
    None."""
    root = cfg.dataset.data_folder
    have = load_manifest(root)
    made = set(have.get("made_dirs", [])) if have else set()
    dirs = [root]
    for d in splits(cfg):
        if d.subfolders > 0:
            dirs.append(os.path.join(root, d.split))
        dirs.extend(d.directories())
    for path in dirs:
        if not os.path.isdir(path):
            os.makedirs(path, exist_ok=True)
            made.add(os.path.relpath(path, root))
        if not inside(path, root):
            return (f"rank 0: cannot prepare {root}: {path} resolves to "
                    f"{os.path.realpath(path)}, outside the data folder")
    lock = os.path.join(root, GENERATING)
    try:
        _generating[:] = [lock, folder_lock.take(lock, lambda who: (
            f"{root} is being generated by another process ({who}): wait for it to finish; "
            f"if it is gone, remove {lock}"))]
    except folder_lock.FolderInUse as e:
        return f"rank 0: {e}"
    write_manifest(cfg, IN_PROGRESS, made)
    return None


def write_manifest(cfg, state=COMPLETE, made=None):
    """The dataset's manifest, written whole or not at all (on one rank), marked in progress
    or complete (once its files are), with the directories made for it (default: those the
    manifest there records)."""
    root = cfg.dataset.data_folder
    path = os.path.join(root, MANIFEST)
    if made is None:
        try:
            have = load_manifest(root)
        except ManifestError:
            have = None
        made = have.get("made_dirs", []) if have else []
    body = dict(manifest_for(cfg), state=state, made_dirs=sorted(made))
    safe_files.write_whole(path, json.dumps(body, indent=1), fsync=True)


def _generate_split(d, cfg, comm, tracker=None, before=0):
    """The files of one split; returns how many this rank wrote. tracker (rank 0's
    progress.Tracker) hears the job's files done, estimated from this rank's (before: the
    files this rank wrote in the splits before this one)."""
    rank, size = comm.Get_rank(), comm.Get_size()
    if d.traits.rows and cfg.io.layout != "multi":
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
                for p in formats.file_paths(d.spec, tmp):
                    _sync(p)
            except BaseException:
                for p in formats.file_paths(d.spec, tmp):
                    _remove(p)          # nothing half-written is left behind
                raise
            # companions first: the dataset's own file under its name says it is whole
            for a, b in reversed(list(zip(formats.file_paths(d.spec, tmp),
                                          formats.file_paths(d.spec, final)))):
                os.replace(a, b)
            written += 1
            if tracker:
                tracker.update(min((before + written) * size, tracker.total))
    except OSError as e:
        where = e.filename or d.root
        error = f"rank {rank}: generating {where}: {e.strerror}"
    except ValueError as e:
        error = f"rank {rank}: generating {d.root}: {e}"
    collective.agree(comm, error)
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
    collective.agree(comm, error)
    try:
        formats.write_file(tmp, 0, d.spec, comm=comm)
    except (OSError, ValueError, RuntimeError) as e:
        text = " ".join(str(e).split())
        # an error the ranks agreed on already names the rank it happened on
        error = text if collective.named_rank(e) is not None else \
            f"rank {rank}: generating {final}: {text}"
    try:
        collective.agree(comm, error)
    except RuntimeError:
        if rank == 0:
            for p in formats.file_paths(d.spec, tmp):
                _remove(p)
        raise
    if rank == 0:
        pairs = list(zip(formats.file_paths(d.spec, tmp), formats.file_paths(d.spec, final)))
        for a, _ in pairs:
            _sync(a)
        for a, b in reversed(pairs):    # companions first, the dataset's own file last
            os.replace(a, b)
    comm.Barrier()
    return 1 if rank == 0 else 0
