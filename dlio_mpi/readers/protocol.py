"""What the training loop (dlio_mpi.run.training_loop, dlio_mpi.run.steploop) asks of a reader: the one
contract every reader keeps (readers.Reader and its kinds, pattern_reader.PatternReader,
volume_reader.VolumeReader, and prefetch.PrefetchReader, which reads ahead for a reader it
holds). The loop uses these and nothing else.

An epoch goes:  plan_epoch(plan, files)   before the barrier that starts it (bookkeeping the
                                          application does not do, out of the epoch's time)
                start_epoch(plan, files)  its first reads queued (fill=False: none, the C step
                                          loop queues them)
                read_batch(samples) and refill() per step (or the C step loop over `ep`)
and at the end close()."""
from typing import Protocol


class BatchReader(Protocol):
    data: object
    """The split's dataset.Dataset: its files, samples and their layout."""

    ep: object
    """The epoch's read-ahead requests built before it starts (engines.EpochRequests), which
    the C step loop runs, or None (the loop calls read_batch)."""

    def plan_epoch(self, plan, files=None):
        """The epoch's (steps, batch) samples (and, with reader.access=stream, the rank's files
        in order), before the barrier that starts the epoch."""

    def start_epoch(self, plan, files=None, fill=True):
        """Called after that barrier, before the first step: the first reads queued where the
        reader reads ahead (with fill False and `ep` built: none)."""

    def read_batch(self, samples):
        """A step's batch: returns the bytes delivered; short data raises an error naming the
        file and offset."""

    def refill(self):
        """While the step computes: queue the next reads (readers that read ahead)."""

    def preprocess_inline(self, n):
        """Seconds of emulated preprocessing the rank's own thread spends on a batch of n
        samples after read_batch (0 where read-ahead threads preprocess, as a loader's
        workers do)."""

    def load(self, f, local):
        """io.read_type=memory: read samples `local` of file f into memory, as an application
        loading its input at start does."""

    def prepare(self, step):
        """With `ep` built: before step `step` is queued, its files opened (the C step loop
        returns to Python for it)."""

    def short_batch(self, step):
        """With `ep` built: the error of step `step`, whose batch came short."""

    def close(self):
        """Close the files and stop the threads (after the last epoch)."""
