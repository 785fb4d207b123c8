"""How big a replay is, before it makes anything, and a replay made smaller.

``estimate(workload, ranks, out_dir, real)`` gives the bytes the replay's dataset takes on the
target's file system, the bytes its run reads and writes, the op logs it keeps, and how long it
should take: the dataset's generation at an assumed ASSUMED_WRITE_BPS (no measurement of the
target is made before it is written), the run at the real job's own pace (its run time per byte
of data read, which carries its compute as well). :func:`refusal` is the one line that says the
estimate does not fit the free space of the target folder, with the largest scale that would
(:func:`fitting_scale`).

``scale(workload, factor, ranks)`` shrinks the dataset and the bytes read to about ``factor`` of
the fitted ones while keeping the pattern: the transfer size, the samples per file, the access
order, the interface, the layout and the ranks stay. The files go first (never fewer than the
ranks of a multi-file layout, nor fewer than give each rank MIN_STEPS batches); where the files
cannot go lower (one shared file), the sample's length in whole transfers (never below one
transfer; whole-sample reads keep their length); then the epochs (never below 1) take the rest
of the bytes read. What changed is returned as ``Scaling``, said in the replay's output and kept
in replay.json.
"""

import copy
import os
from dataclasses import dataclass, field

from dlio_mpi.display import units
from dlio_mpi.files.nearest_folder import existing_folder

from dlio_mpi_analysis.fitting.fit_patterns import framing

ASSUMED_WRITE_BPS = 512 * 2**20  # dataset generation, bytes/s: stated, not measured
OPLOG_OP_BYTES = 48             # an op log row: start, duration, offset, bytes (8 B each),
# file, op, interface
HEADER_ALLOWANCE = 4096         # a file's own headers beyond its samples and their framing
OUTPUT_ALLOWANCE = 1 << 20      # summary, per-rank rows, fitted.yaml, replay.json
MIN_STEPS = 3                   # per rank and epoch in a scaled multi-file replay: two pauses
# between steps at least, which is what a fit needs to see batches and compute


class ReplaySizeError(ValueError):
    """The replay would not fit the free space of its target folder (a usage error: exit 2)."""


@dataclass
class Estimate:
    dataset_bytes: int          # the dataset's files, whole blocks
    bytes_read: int             # by the run
    bytes_written: int          # by the run (io.write_first writes the dataset)
    oplog_bytes: int
    need_bytes: int             # on the target's file system, less what is there already
    free_bytes: int             # None when the file system cannot say
    folder: str                 # the target's nearest existing folder, whose space is counted
    generate_s: float
    run_s: float
    pace: str                   # what run_s is based on

    def text(self):
        return (f"dataset {units.size(self.dataset_bytes)}, reads {units.size(self.bytes_read)}"
                + (f", writes {units.size(self.bytes_written)}" if self.bytes_written else "")
                + f", op logs {units.size(self.oplog_bytes)}; about "
                f"{units.duration(self.generate_s)} to generate (at an assumed "
                f"{units.rate(ASSUMED_WRITE_BPS)}) and {units.duration(self.run_s)} to run "
                f"({self.pace}); needs {units.size(self.need_bytes)} "
                f"in {self.folder}, which has "
                + ("an unknown amount" if self.free_bytes is None else units.size(self.free_bytes))
                + " free")

    def to_dict(self):
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass
class Scaling:
    factor: float
    changed: dict = field(default_factory=dict)     # "section.key" -> [fitted, scaled]
    dataset_ratio: float = 1.0                       # scaled / fitted
    read_ratio: float = 1.0
    kept: tuple = ("reader.transfer_size", "dataset.num_samples_per_file", "access order",
                   "io.interface", "io.layout", "ranks")

    def text(self):
        what = ", ".join(f"{k} {a} -> {b}" for k, a, b in
                         ((k, *v) for k, v in self.changed.items())) or "nothing"
        short = "" if self.read_ratio <= 1.5 * self.factor else \
            (" (no smaller replay keeps the pattern: its files, samples of one transfer and "
             "epochs are at their least)")
        return (f"scaled by {self.factor:g}: {what}{short} (dataset {self.dataset_ratio:.3g}, "
                f"bytes read {self.read_ratio:.3g} of the fitted workload's; kept: "
                f"{', '.join(self.kept)}); bytes, calls and files differ from the real job's "
                f"by that much")

    def to_dict(self):
        return {"factor": self.factor, "changed": dict(self.changed),
                "dataset_ratio": self.dataset_ratio, "read_ratio": self.read_ratio,
                "kept": list(self.kept)}


def file_bytes(workload):
    """One data file's size: the format's own layout where it has one (no I/O), else the
    samples with their framing and HEADER_ALLOWANCE."""
    from dlio_mpi import formats
    from dlio_mpi.config import loader as config
    from dlio_mpi.data.dataset import format_spec

    ds = workload["dataset"]
    try:
        cfg = config.load(doc=workload, doc_source="the fitted workload")
        spec = format_spec(cfg)
        if hasattr(formats.get(spec.format), "layout"):
            return int(formats.layout(spec, 0).file_size)
    except (config.ConfigError, ValueError):
        pass
    return ds["num_samples_per_file"] * (ds["record_length"] + framing(ds["format"])) \
        + HEADER_ALLOWANCE


def _sample_bytes(workload):
    ds = workload["dataset"]
    return ds["num_files_train"] * ds["num_samples_per_file"] * ds["record_length"]


def estimate(workload, ranks, out_dir, real_bytes_read, real_run_time, fitted=None):
    """The replay's :class:`Estimate` (module docstring). ``real_bytes_read`` and
    ``real_run_time``: the real job's data bytes read and run time; ``fitted``: the workload
    as fitted, when ``workload`` is it scaled (its bytes read are the real job's in the same
    proportion)."""
    folder = existing_folder(out_dir)
    if not workload.get("workflow", {}).get("train", True):
        # checkpoint-only: no dataset, the checkpoints at the real job's pace
        ck = workload["checkpoint"]
        st = os.statvfs(folder)
        per = workload["model"].get("model_size_bytes", 0) \
            * (1 + ck.get("optimizer_multiplier", 0.0))
        written = int(per * ck.get("num_checkpoints_write", 1))
        free = st.f_bavail * st.f_frsize if st.f_frsize else None
        return Estimate(dataset_bytes=0, bytes_read=0, bytes_written=written,
                        oplog_bytes=0, need_bytes=written + OUTPUT_ALLOWANCE,
                        free_bytes=free, folder=folder, generate_s=0.0,
                        run_s=real_run_time or 0.0, pace="the real job's run time")
    ds, io = workload["dataset"], workload["io"]
    st = os.statvfs(folder)
    block = st.f_frsize or st.f_bsize or 4096
    per_file = -(-file_bytes(workload) // block) * block
    dataset = ds["num_files_train"] * per_file
    base = fitted or workload
    ratio = (_sample_bytes(workload) * workload["train"]["epochs"]) \
        / max(1, _sample_bytes(base) * base["train"]["epochs"])
    bytes_read = int(real_bytes_read * ratio)
    written = dataset if io.get("write_first") else 0
    piece = workload["reader"].get("transfer_size") or ds["record_length"] or 1
    oplog = OPLOG_OP_BYTES * (-(-bytes_read // piece) + -(-written // piece)
                              + 4 * ds["num_files_train"] * max(1, ranks))
    there = bytes_under(os.path.join(out_dir, "data"))
    need = max(0, dataset - there) + oplog + OUTPUT_ALLOWANCE
    free = st.f_bavail * st.f_frsize if st.f_frsize else None
    if real_run_time and real_bytes_read:
        run_s = real_run_time * ratio
        pace = (f"the real job's pace: {real_run_time:,.3g} s for "
                f"{units.size(real_bytes_read)} of data reads")
    else:
        run_s = bytes_read / ASSUMED_WRITE_BPS
        pace = f"an assumed {units.rate(ASSUMED_WRITE_BPS)} of reads"
    return Estimate(dataset_bytes=dataset, bytes_read=bytes_read, bytes_written=written,
                    oplog_bytes=oplog, need_bytes=need, free_bytes=free, folder=folder,
                    generate_s=dataset / ASSUMED_WRITE_BPS, run_s=run_s, pace=pace)


def refusal(est, fitting_scale):
    """The one line refusing a replay that does not fit the target's free space, with the
    largest scale that fits (``fitting_scale``, None when none does); None when it fits."""
    if est.free_bytes is None or est.need_bytes <= est.free_bytes:
        return None
    hint = f"give --scale {fitting_scale:g} or less, or another --out" if fitting_scale \
        else "no --scale keeps the pattern in less: give another --out"
    return (f"replay: needs {units.size(est.need_bytes)} ({est.need_bytes} bytes: dataset "
            f"{est.dataset_bytes}, op logs {est.oplog_bytes}) in {est.folder}, which has "
            f"{units.size(est.free_bytes)} ({est.free_bytes} bytes) free: {hint}")


def fitting_scale(workload, ranks, out_dir, real_bytes_read, real_run_time):
    """The largest of the scales 0.99, 0.98, ... 0.01 whose replay fits the target's free
    space; None when none does."""
    for percent in range(99, 0, -1):
        scaled, _ = scale(workload, percent / 100, ranks)
        est = estimate(scaled, ranks, out_dir, real_bytes_read, real_run_time, fitted=workload)
        if est.free_bytes is None or est.need_bytes <= est.free_bytes:
            return percent / 100
    return None


def scale(workload, factor, ranks):
    """The workload shrunk to about ``factor`` (module docstring): (workload, Scaling)."""
    w = copy.deepcopy(workload)
    ds, rd, tr = w["dataset"], w["reader"], w["train"]
    s = Scaling(factor=factor)
    files, spf, record = ds["num_files_train"], ds["num_samples_per_file"], ds["record_length"]
    if w["io"]["layout"] == "multi":
        least = max(1, ranks, -(-ranks * rd["batch_size"] * MIN_STEPS // spf))
        new_files = min(files, max(least, round(files * factor)))
    else:
        new_files = files
    new_record = record
    left = factor * files / new_files               # what the files could not take
    transfer = rd.get("transfer_size") or 0
    if left < 1 and transfer and record > transfer:
        pieces = max(1, round(record * left / transfer))
        new_record = min(record, pieces * transfer)
    dataset_ratio = new_files * new_record / (files * record)
    epochs = tr["epochs"]
    new_epochs = min(epochs, max(1, round(epochs * factor / dataset_ratio)))
    for key, old, new in (("dataset.num_files_train", files, new_files),
                          ("dataset.record_length", record, new_record),
                          ("train.epochs", epochs, new_epochs)):
        if old != new:
            s.changed[key] = [old, new]
    ds["num_files_train"], ds["record_length"], tr["epochs"] = new_files, new_record, new_epochs
    s.dataset_ratio = dataset_ratio
    s.read_ratio = dataset_ratio * new_epochs / epochs
    return w, s



def bytes_under(folder):
    """Bytes (in blocks) of the files under folder (a dataset an earlier replay left)."""
    total = 0
    for root, _, names in os.walk(folder):
        for n in names:
            try:
                total += os.lstat(os.path.join(root, n)).st_blocks * 512
            except OSError:
                pass
    return total
