"""What a job says while it runs. Rank 0 writes timestamped lines through `logging` (the
"dlio_mpi" logger), each flushed as it is written, so that a batch job's log shows every epoch
as it ends, and within a long phase a line every few seconds (steps done of the total,
samples/s, time left): information to stdout, warnings and errors to stderr, and everything to
a log file in the run's folder. On a terminal a live bar (tqdm, on stderr) stands for the lines
within a phase. The other ranks say errors only: every rank would say the same."""
import logging
import os
import sys
import time

from dlio_mpi.files import safe_files
from dlio_mpi.display import units

LOGGER = "dlio_mpi"
LOG_FILE = "dlio_mpi.log"
FORMAT = "[%(levelname)s] %(asctime)s %(message)s"
TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"
# seconds between two lines within a phase, when stdout is no terminal (a batch log);
# DLIO_MPI_PROGRESS_EVERY sets another
EVERY_S = 5.0

log = logging.getLogger(LOGGER)
log.propagate = False
# silent until setup(): a run made from Python (advise's runs, tests) says nothing of its own
log.addHandler(logging.NullHandler())


class _ToStream(logging.StreamHandler):
    """A handler on a standard stream that writes around a live bar (tqdm.write clears and
    redraws it) when one may be shown, and reads sys.stdout/sys.stderr when it writes, so
    that a stream replaced since (a test's capture) is the one written to."""

    def __init__(self, name, around_bar):
        super().__init__()
        self.name_of_stream = name
        self.around_bar = around_bar

    @property
    def stream(self):
        return getattr(sys, self.name_of_stream)

    @stream.setter
    def stream(self, value):
        pass

    def emit(self, record):
        if not self.around_bar:
            return super().emit(record)
        try:
            from tqdm import tqdm
            tqdm.write(self.format(record), file=self.stream)
        except Exception:       # as logging.StreamHandler: a failed write is reported, not raised
            self.handleError(record)


def _own_handlers():
    return [h for h in log.handlers if getattr(h, "dlio_mpi_console", False)]


_state = {"rank0": True}


def live_bar():
    """Whether this process shows a live bar: rank 0 with stderr on a terminal."""
    return _state["rank0"] and sys.stderr.isatty()


def setup(rank, verbosity=0):
    """The console handlers of this process: on rank 0, information (debug with verbosity > 0,
    none with verbosity < 0) to stdout, warnings and errors to stderr; on other ranks, errors
    to stderr. Called again, it replaces the handlers it made before."""
    for h in _own_handlers():
        log.removeHandler(h)
    _state["rank0"] = rank == 0
    log.setLevel(logging.DEBUG)
    bar = rank == 0 and sys.stderr.isatty()
    fmt = logging.Formatter(FORMAT, TIME_FORMAT)
    if rank == 0:
        out = _ToStream("stdout", bar)
        out.setLevel(logging.DEBUG if verbosity > 0 else
                     logging.INFO if verbosity == 0 else logging.WARNING)
        out.addFilter(lambda r: r.levelno < logging.WARNING)
        handlers = [out]
    else:
        handlers = []
    err = _ToStream("stderr", bar)
    err.setLevel(logging.WARNING if rank == 0 else logging.ERROR)
    handlers.append(err)
    for h in handlers:
        h.setFormatter(fmt)
        h.dlio_mpi_console = True
        log.addHandler(h)


def open_log_file(folder):
    """Rank 0: every line of the run from now on also in folder/LOG_FILE (created through
    safe_files). Returns the handler, for close_log_file."""
    stream = safe_files.create(os.path.join(folder, LOG_FILE), "w")
    handler = logging.StreamHandler(stream)
    handler.setLevel(logging.DEBUG)
    handler.setFormatter(logging.Formatter(FORMAT, TIME_FORMAT))
    log.addHandler(handler)
    return handler


def close_log_file(handler):
    if handler is not None:
        log.removeHandler(handler)
        handler.close()
        handler.stream.close()


def every_s():
    """Seconds between two progress lines within a phase."""
    try:
        return max(float(os.environ.get("DLIO_MPI_PROGRESS_EVERY", EVERY_S)), 0.0)
    except ValueError:
        return EVERY_S


def _duration(seconds):
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


class Tracker:
    """Progress through one phase of a known number of units (steps, files): a line every
    every_s() seconds with the units done, the rate and the time left, or on a terminal a
    live bar. units_per_item converts a unit into what the rate counts (samples per step)."""

    def __init__(self, what, total, unit, rate_unit=None, units_per_item=1.0):
        self.what, self.total, self.unit = what, total, unit
        self.rate_unit, self.per = rate_unit or f"{unit}/s", units_per_item
        self.start = self.last = time.perf_counter()
        self.every = every_s()
        self.bar = None
        if live_bar():
            from tqdm import tqdm
            self.bar = tqdm(total=total, desc=what, unit=unit, leave=False, file=sys.stderr,
                            dynamic_ncols=True)

    def update(self, done):
        now = time.perf_counter()
        if self.bar is not None:
            self.bar.update(done - self.bar.n)
            return
        if done >= self.total or now - self.last < self.every:
            return
        self.last = now
        elapsed = now - self.start
        rate = done / elapsed if elapsed > 0 else 0.0
        left = f", {_duration((self.total - done) / rate)} left" if rate > 0 else ""
        log.info(f"{self.what}: {done} of {self.total} {self.unit}, "
                 f"{rate * self.per:,.1f} {self.rate_unit}{left}")

    def close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class RunProgress:
    """Rank 0's progress through a run's training: the hook the training loop calls after its
    steps (epoch from 0, steps done, the epoch's steps), and the lines said when a phase or a
    checkpoint ends. Rates are the job's: rank 0's steps times the ranks (every rank takes
    the same number of steps, and the exchange keeps them together)."""

    def __init__(self, cfg, ranks):
        self.epochs, self.ranks = cfg.train.epochs, ranks
        self.batch = cfg.reader.batch_size
        self.tracker, self.epoch = None, None

    def __call__(self, epoch, step, steps):
        if self.epoch != epoch:
            self.close()
            self.epoch = epoch
            log.debug(f"epoch {epoch + 1} of {self.epochs}: {steps} steps expected")
            self.tracker = Tracker(f"epoch {epoch + 1}/{self.epochs}", steps, "steps",
                                   "samples/s", self.batch * self.ranks)
        self.tracker.update(step)

    def close(self):
        if self.tracker is not None:
            self.tracker.close()
            self.tracker = None

    def phase_done(self, entry):
        """A phase's own figures (pipeline's phase entry, on rank 0), said as it ends."""
        self.close()
        self.epoch = None
        wall = entry["wall_s"]
        rate = entry["samples"] * self.ranks / wall if wall > 0 else 0.0
        if entry["phase"] == "train":
            log.info(f"Ending epoch {entry['epoch'] + 1} of {self.epochs} - {entry['steps']} "
                     f"steps completed in {wall:.2f} s ({rate:,.1f} samples/s)")
        elif entry["phase"] == "eval":
            log.info(f"Ending evaluation after epoch {entry['epoch'] + 1} - {entry['steps']} "
                     f"steps completed in {wall:.2f} s ({rate:,.1f} samples/s)")
        elif entry["phase"] == "load":
            log.info(f"input read into memory in {wall:.2f} s")
        elif entry["phase"] == "write":
            log.info(f"dataset written first (io.write_first) in {wall:.2f} s")

    def checkpoint_done(self, entry):
        checkpoint_line(entry)


def checkpoint_line(entry):
    """A checkpoint written or read (its record, schedule.record), said as it ends."""
    verb = "written" if entry["op"] == "write" else "read"
    log.info(f"checkpoint {entry['index']} {verb}: {units.size_in(entry['bytes'], 'MiB', 1)} in "
             f"{entry['duration_s']:.2f} s ({units.rate_in(entry['bandwidth_bytes_per_s'], 'MiB')})")
