"""VolumeReader: samples that are crops of HDF5 volumes (dataset.volumes), each crop of each
volume one H5Dread of an N-D box (collective through hdf5_coll: a batch's worth of calls on
every rank) by the native engine (libhdf5 reads the chunks
the box touches), in the order the volumes are listed, sample by sample, each from the file
it is kept in (the dataset's file or a companion). A shared file is
opened by all ranks together (MPI-IO driver) or by each rank (sec2); a rank's own files by the
rank alone."""
import numpy as np

from dlio_mpi import engines
from dlio_mpi.formats.volumes import companion, crop_start, volume_file, volume_file_id
from dlio_mpi.readers.reader import Reader


class _Volumes:
    """The open datasets of one file, closed together."""

    def __init__(self, handles):
        self.handles = handles

    @property
    def inflight(self):
        return 0        # volumes are read by the rank's own thread only

    def close(self):
        for h in self.handles:
            h.close()


class VolumeReader(Reader):
    def __init__(self, cfg, comm, log, split="train"):
        super().__init__(cfg, comm, log, split)
        self.driver = self.backend.hdf5_driver
        self.shared = cfg.io.layout != "multi"
        # collective crops: one box a call, every rank in every call (a shared file)
        self.collective = self.backend.collective and self.shared
        self.crop = np.asarray(self.data.spec.crop_shape, dtype=np.int64)
        self.box = engines.aligned_empty(self.data.max_sample_bytes(), 4096)
        if self.shared:
            self.files.add(0, self._new_handle(0), pinned=True)

    def _new_handle(self, i):
        from mpi4py import MPI
        comm = self.comm if self.shared else MPI.COMM_SELF
        opened = []
        try:
            spec = self.data.spec
            for v, (name, *_) in enumerate(spec.volumes):
                opened.append(engines.H5Dataset(
                    companion(self.path(i), volume_file(spec, v)), name, driver=self.driver,
                    comm=comm if self.driver == "mpio" else None,
                    collective=self.collective,
                    hints=self.cfg.io.mpiio_hints,
                    file_id=volume_file_id(spec, v, self.data.first_id + i), oplog=self.log))
        except Exception:
            for h in opened:
                h.close()
            raise
        return _Volumes(opened)

    def read_batch(self, samples):
        total = 0
        spf = self.data.spf
        samples = np.asarray(samples).tolist()
        if self.collective:
            # a batch's worth of collective calls on every rank, a short batch's missing
            # crops joined with boxes of nothing
            nothing = np.zeros_like(self.crop)
            for k in range(self.batch):
                f, start, count = 0, nothing, nothing
                if k < len(samples):
                    f, j = divmod(samples[k], spf)
                    start, count = crop_start(self.data.spec, f, j), self.crop
                for h in self._open(f).handles:
                    total += h.read_box(start, count, out=self.box)[1]
            return total
        for s in samples:
            f, k = divmod(s, spf)
            start = crop_start(self.data.spec, f, k)
            for h in self._open(f).handles:
                _, got = h.read_box(start, self.crop, out=self.box)
                total += got
        return total

    def read_extent(self, f, lo, hi):
        raise NotImplementedError("HDF5 volumes are read as crops")
