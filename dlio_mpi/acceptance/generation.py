"""datagen: the procedure's dataset, sized by the rules for the largest process count the runs
will use, generated once in parallel over the ranks (a rerun completes what is missing), with
its log and record in the results folder."""
import os
import time

from dlio_mpi.data import generation as datagen
from dlio_mpi.run import progress
from dlio_mpi.acceptance import configs, datasize, results_folder, rules
from dlio_mpi.acceptance.rules import AcceptanceError


def undersized_line(files, m, flag):
    return (f"dataset.num_files_train={files} is under the rules' minimum of "
            f"{m.num_files_train} files ({m.rule}, for {m.accelerators} accelerators on "
            f"{m.hosts} hosts): give {flag} to go on with it (the result is then reported "
            "not compliant)")


def _dataset_ready(cfg, results, workload):
    """The dataset in the data folder is the one cfg reads, and complete."""
    data = cfg.dataset.data_folder
    try:
        have = datagen.load_manifest(data)
    except datagen.ManifestError as e:
        raise AcceptanceError(str(e)) from None
    again = f"python -m dlio_mpi acceptance datagen {workload} --results {results}"
    if have is None:
        raise AcceptanceError(f"{data} holds no dataset: make it first ({again})")
    if datagen.description(have) != datagen.manifest_for(cfg):
        raise AcceptanceError(f"{data} holds another dataset than the one these settings read "
                              "(overrides that change the dataset differ from datagen's)")
    if datagen.in_progress(have):
        raise AcceptanceError(f"{data}: the dataset's generation did not finish: run "
                              f"{again} again")


def dataset_config(workload, results, user_overrides):
    """(base overrides, configuration) of the runs over the dataset datagen made in results,
    the user's overrides applied; AcceptanceError when the folder holds no such dataset."""
    marker = results_folder.read_marker(results)
    if marker is None:
        raise AcceptanceError(
            f"results folder {results} holds no acceptance dataset ({results_folder.MARKER}): "
            f"make it first (python -m dlio_mpi acceptance datagen {workload} --results "
            f"{results})")
    results_folder.check_owner(results, workload, marker)
    dataset = marker.get("dataset") or {}
    base = configs.base(workload, results, marker.get("overrides", []),
                        sized=(dataset.get("num_files_train"),
                               dataset.get("num_subfolders_train")))
    base += list(user_overrides)
    cfg = configs.load(base)
    _dataset_ready(cfg, results, workload)
    return base, cfg, marker


def _claim(results, workload, user_overrides, cfg, m, started):
    """Rank 0: the results folder taken for this procedure (its marker written), the
    generation's folder made; returns (marker, folder)."""
    marker = results_folder.read_marker(results)
    results_folder.check_owner(results, workload, marker)
    dataset = {"data_folder": cfg.dataset.data_folder,
               "num_files_train": cfg.dataset.num_files_train,
               "num_subfolders_train": cfg.dataset.num_subfolders_train}
    if marker is not None and (marker.get("dataset") != dataset
                               or marker.get("overrides") != list(user_overrides)):
        raise AcceptanceError(
            f"results folder {results} holds a dataset made with other settings "
            f"({marker.get('dataset', {}).get('num_files_train')} files, overrides "
            f"{' '.join(marker.get('overrides', [])) or 'none'}): give another folder")
    os.makedirs(results, exist_ok=True)
    marker = {"procedure": results_folder.PROCEDURE, "workload": workload,
              "overrides": list(user_overrides), "dataset": dataset,
              "datasize": {**m.as_json(), "hosts": m.hosts, "accelerators": m.accelerators,
                           "host_memory_bytes": m.host_memory_bytes},
              "generated": None}
    results_folder.write_marker(results, marker)
    return marker, results_folder.new_step_folder(results, workload, "datagen", started)


def generate(workload, results, user_overrides, comm, *, hosts, accelerators,
             host_memory_bytes, allow_undersized):
    """Collective: generate the dataset. Returns (files written, files there already, the
    configuration, the rules' minimum). AcceptanceError before anything is written."""
    rules.threshold(workload)
    configs.check_overrides(user_overrides)
    datasize.check_even(hosts, accelerators)
    shape = configs.load(configs.base(workload, results, user_overrides))
    m = datasize.minimum(record_length=shape.dataset.record_length,
                         samples_per_file=shape.dataset.num_samples_per_file,
                         batch_size=shape.reader.batch_size, hosts=hosts,
                         accelerators=accelerators, host_memory_bytes=host_memory_bytes)
    # the user's own file count (a smaller dataset, with the flag) is sharded as its size asks
    files = configs.given(user_overrides).get("dataset.num_files_train")
    files = shape.dataset.num_files_train if files is not None else m.num_files_train
    cfg = configs.load(configs.base(workload, results, user_overrides,
                                    sized=(files, datasize.subfolders(files)))
                       + ["workflow.generate_data=true"])
    if cfg.dataset.num_files_train < m.num_files_train and not allow_undersized:
        raise AcceptanceError(undersized_line(cfg.dataset.num_files_train, m,
                                              "--allow-undersized-dataset"))
    started = comm.bcast(time.time(), root=0)
    error = marker = folder = log_file = None
    if comm.Get_rank() == 0:
        try:
            marker, folder = _claim(results, workload, user_overrides, cfg, m, started)
            log_file = progress.open_log_file(folder)
            progress.log.info(f"acceptance datagen {workload}: {cfg.dataset.num_files_train} "
                              f"files in {cfg.dataset.data_folder} on {comm.Get_size()} ranks")
        except AcceptanceError as e:
            error = str(e)
        except OSError as e:
            error = f"results folder {results} cannot be written: {e.strerror} ({e.filename})"
    error = comm.bcast(error, root=0)
    if error:
        raise AcceptanceError(error)
    try:
        t0 = time.perf_counter()
        written = comm.allreduce(datagen.generate(cfg, comm, say=True))
        seconds = time.perf_counter() - t0
        if comm.Get_rank() == 0:
            record = {"files_written": written,
                      "files_complete_before": cfg.dataset.num_files_train - written,
                      "seconds": seconds, "ranks": comm.Get_size(),
                      "data_folder": cfg.dataset.data_folder, "folder": folder}
            results_folder.write_json(os.path.join(folder, "datagen.json"),
                                      {**record, "datasize": marker["datasize"]})
            marker["generated"] = record
            results_folder.write_marker(results, marker)
    finally:
        progress.close_log_file(log_file)
    return written, cfg.dataset.num_files_train - written, cfg, m
