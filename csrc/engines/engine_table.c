/* The engine table: one struct of read operations per engine. Each entry calls the engine's
 * own functions, so that a read through the table is the read the engine makes when called
 * directly (same transfers, op-log entries and errors): the engines of byte ranges through their
 * transfers and the one transfer loop, HDF5 through its row reads. */
#define _GNU_SOURCE
#include "dm.h"

static int always(const void *h, dm_err *e) { (void)h; (void)e; return 1; }

static int64_t bytes_span(const void *h, size_t n, const int64_t *len) {
    (void)h;
    int64_t s = 0;
    for (size_t i = 0; i < n; i++) s += len[i];
    return s;
}

/* engines of byte ranges: their own transfers through the one transfer loop */
static int ranges_readv(const dm_engine_ops *ops, void *h, size_t n, const int64_t *off,
                        const int64_t *len, int64_t xfer, char *buf, int discard,
                        int64_t *total, dm_err *e) {
    dm_transfer t = ops->transfer(h, DM_OP_READ, xfer);
    t.discard = discard;
    return dm_transfer_ranges(&t, n, off, len, buf, NULL, 0, total, e);
}

/* ---- POSIX (buffered, O_DIRECT, mmap) */
static dm_oplog *posix_log(const void *h) { return ((const dm_posix *)h)->log; }
static dm_transfer posix_transfer(void *h, int op, int64_t xfer) {
    return dm_posix_transfer(h, op, xfer);
}

static dm_inflight *posix_inflight(void *h) { return &((dm_posix *)h)->inflight; }

const dm_engine_ops dm_posix_ops = {"posix", 0, always, bytes_span, posix_log, posix_transfer,
                                    ranges_readv, posix_inflight, 1};

/* ---- STDIO */
static dm_oplog *stdio_log(const void *h) { return ((const dm_stdio *)h)->log; }
static dm_transfer stdio_transfer(void *h, int op, int64_t xfer) {
    return dm_stdio_transfer(h, op, xfer);
}

static dm_inflight *stdio_inflight(void *h) { return &((dm_stdio *)h)->inflight; }

const dm_engine_ops dm_stdio_ops = {"stdio", 1, always, bytes_span, stdio_log, stdio_transfer,
                                    ranges_readv, stdio_inflight, 1};

/* ---- MPI-IO, independent reads (the collective read_all is not in the table): explicit
 * offsets, so a handle's reads may run side by side; from read-ahead threads they need an MPI
 * initialized with MPI_THREAD_MULTIPLE (the readers check it) */
static dm_oplog *mpiio_log(const void *h) { return ((const dm_mpiio *)h)->log; }
static dm_transfer mpiio_transfer(void *h, int op, int64_t xfer) {
    return dm_mpiio_transfer(h, op, xfer);
}

static dm_inflight *mpiio_inflight(void *h) { return &((dm_mpiio *)h)->inflight; }

const dm_engine_ops dm_mpiio_ops = {"mpiio", 0, always, bytes_span, mpiio_log, mpiio_transfer,
                                    ranges_readv, mpiio_inflight, 1};

/* ---- io_uring: its own queue of transfers (a handle's ring used by one thread at a time) */
static dm_oplog *uring_log(const void *h) { return ((const dm_uring *)h)->file.log; }
static dm_inflight *uring_inflight(void *h) { return &((dm_uring *)h)->file.inflight; }

static int uring_readv(const dm_engine_ops *ops, void *h, size_t n, const int64_t *off,
                       const int64_t *len, int64_t xfer, char *buf, int discard, int64_t *total,
                       dm_err *e) {
    (void)ops;
    return dm_uring_ranges(h, n, off, len, xfer, buf, discard, 0, NULL, 0, total, e);
}

const dm_engine_ops dm_uring_ops = {"io_uring", 1, always, bytes_span, uring_log, NULL,
                                    uring_readv, uring_inflight, 1};

/* ---- HDF5: ranges are rows (start, count) of dimension 0. libhdf5 is not thread-safe in
 * this build: every HDF5 call of the engine holds one lock (dm_h5_lock), so read-ahead threads
 * take turns inside libhdf5; through the MPI-IO driver the reads need MPI_THREAD_MULTIPLE as
 * MPI-IO's do */
static dm_oplog *h5_log(const void *h) { return ((const dm_h5 *)h)->log; }

static int h5_threadable(const void *hp, dm_err *e) {
    const dm_h5 *h = hp;
    if (!h->collective) return 1;
    dm_err_set(e, DM_EARG, "read-ahead cannot issue collective HDF5 reads (%s)", h->path);
    return 0;
}

static int64_t h5_span(const void *hp, size_t n, const int64_t *len) {
    return bytes_span(hp, n, len) * ((const dm_h5 *)hp)->row_bytes;
}

static int h5_readv(const dm_engine_ops *ops, void *h, size_t n, const int64_t *off,
                    const int64_t *len, int64_t xfer, char *buf, int discard, int64_t *total,
                    dm_err *e) {
    (void)ops;
    (void)xfer;     /* libhdf5 decides its transfers */
    (void)discard;  /* and reads a selection into a buffer that holds it */
    return dm_h5_read_rows(h, n, off, len, buf, total, e);
}

static dm_inflight *h5_inflight(void *h) { return &((dm_h5 *)h)->inflight; }

const dm_engine_ops dm_h5_ops = {"hdf5", 0, h5_threadable, h5_span, h5_log, NULL, h5_readv,
                                 h5_inflight, 0};
