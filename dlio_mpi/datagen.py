"""Dataset generation: raw record files written in parallel, each file by exactly one rank.

A file appears under its final name only when complete (written to a temporary name, then
renamed); a rerun skips complete files and replaces anything else. Rank 0 writes the manifest
last, so a dataset with a manifest is whole; readers take the file list from the manifest and
never list the directory."""
import json
import os

import numpy as np

MANIFEST = "manifest.json"


def file_name(i):
    return f"train/file_{i:06d}.bin"


def record_content(seed, file_index, samples_per_file, record_bytes):
    """The deterministic bytes of one file, so that reads can be verified."""
    rng = np.random.default_rng([seed, file_index])
    return rng.integers(0, 256, samples_per_file * record_bytes, dtype=np.uint8)


def manifest_for(cfg):
    ds = cfg.dataset
    return {
        "format": "raw",
        "num_files": ds.num_files_train,
        "samples_per_file": ds.num_samples_per_file,
        "record_bytes": ds.record_length,
        "seed": cfg.train.seed,
        "files": "train/file_{index:06d}.bin",
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


def generate(cfg, comm):
    """Write the dataset of cfg under cfg.dataset.data_folder on every rank of comm (collective).
    Returns the number of files this rank wrote."""
    rank, size = comm.Get_rank(), comm.Get_size()
    want = manifest_for(cfg)
    error = None
    if rank == 0:
        try:
            os.makedirs(os.path.join(cfg.dataset.data_folder, "train"), exist_ok=True)
            have = read_manifest(cfg.dataset.data_folder)
            if have is not None and have != want:
                os.unlink(os.path.join(cfg.dataset.data_folder, MANIFEST))   # a different dataset
        except (OSError, RuntimeError) as e:
            error = f"rank 0: cannot prepare {cfg.dataset.data_folder}: {e}"
    error = comm.bcast(error, root=0)
    if error:
        raise RuntimeError(error)
    written = 0
    ds = cfg.dataset
    expect = ds.num_samples_per_file * ds.record_length
    try:
        for i in range(rank, ds.num_files_train, size):
            final = os.path.join(cfg.dataset.data_folder, file_name(i))
            try:
                if os.stat(final).st_size == expect:
                    continue
            except FileNotFoundError:
                pass
            tmp = f"{final}.part.{rank}"
            data = record_content(cfg.train.seed, i, ds.num_samples_per_file, ds.record_length)
            with open(tmp, "wb") as f:
                data.tofile(f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, final)
            written += 1
    except OSError as e:
        error = f"rank {rank}: generating {cfg.dataset.data_folder}: {e}"
    errors = [m for m in comm.allgather(error) if m]
    if errors:
        raise RuntimeError(errors[0])
    if rank == 0:
        path = os.path.join(cfg.dataset.data_folder, MANIFEST)
        with open(path + ".part", "w") as f:
            json.dump(want, f, indent=1)
        os.replace(path + ".part", path)
    comm.Barrier()
    return written
