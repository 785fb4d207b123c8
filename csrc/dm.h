/* dlio_mpi native I/O engines: the C hot path.
 *
 * Every function here is plain C with no Python API and may be called without the GIL.
 * Functions return 0 on success and -1 on failure, with a message in the dm_err the caller
 * passes (which names the operation, file and offset; the Python layer adds the rank).
 */
#ifndef DLIO_MPI_DM_H
#define DLIO_MPI_DM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <mpi.h>
#include <hdf5.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ errors */
#define DM_MSG_LEN 768
typedef struct {
    int code;               /* errno, or a DM_E* value below */
    char msg[DM_MSG_LEN];
} dm_err;

enum {
    DM_EOF = 10001,         /* fewer bytes than asked for, with exact=1 */
    DM_EALIGN = 10002,      /* O_DIRECT request not aligned */
    DM_EMPI = 10003,        /* an MPI call failed */
    DM_EHDF5 = 10004,       /* an HDF5 call failed */
    DM_EARG = 10005,        /* bad argument */
    DM_ENOMEM = 10006,
};

void dm_err_set(dm_err *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void dm_err_clear(dm_err *e);
/* The error of an open for writing (flags DM_O_*) that failed with err because an entry holds
 * the name of a new file (EEXIST) or a link does (ELOOP): set on e, returns 1; else 0. */
int dm_refused_write(dm_err *e, int err, const char *path, int flags);

/* ------------------------------------------------------------------ op log */
/* Operation kinds and interfaces, as stored in the op log. */
enum dm_op {
    DM_OP_READ = 0, DM_OP_WRITE = 1, DM_OP_OPEN = 2, DM_OP_CLOSE = 3,
    DM_OP_FSYNC = 4, DM_OP_FDATASYNC = 5, DM_OP_SEEK = 6, DM_OP_STAT = 7,
    DM_OP_MMAP = 8, DM_OP_VIEW = 9, DM_OP_N = 10
};
enum dm_iface {
    DM_IF_POSIX = 0, DM_IF_POSIX_DIRECT = 1, DM_IF_STDIO = 2, DM_IF_MMAP = 3,
    DM_IF_MPIIO_IND = 4, DM_IF_MPIIO_COLL = 5, DM_IF_HDF5_IND = 6, DM_IF_HDF5_COLL = 7,
    DM_IF_HDF5_SEC2 = 8, DM_IF_IO_URING = 9, DM_IF_N = 10
};

/* Log-bucketed latency histogram: bucket b holds durations d (ns) with
 * floor(4*log2(d)) == b - 1 (bucket 0: d < 1 ns), i.e. four buckets per doubling. */
#define DM_HIST_BUCKETS 160

typedef struct dm_oplog {
    /* struct of arrays, cap entries each; entries [0, n) are valid */
    int64_t *start;       /* ns since the log's origin (ticks until dm_oplog_finalize) */
    int64_t *dur;         /* ns (ticks until finalized) */
    int64_t *offset;      /* file offset, or -1 where none */
    int64_t *bytes;       /* bytes actually moved */
    int32_t *file;        /* file id given at open */
    uint8_t *op;          /* enum dm_op */
    uint8_t *iface;       /* enum dm_iface */
    size_t cap;
    size_t n;             /* entries recorded */
    size_t nconv;         /* entries [0, nconv) converted to ns */
    int concurrent;       /* set while several threads record: index taken atomically */
    int enabled;
    uint64_t tick0;       /* origin in ticks */
    int64_t mono0_ns;     /* CLOCK_MONOTONIC at the origin */
    double ns_per_tick;
    /* operations that did not fit: counted per interface and operation, not kept one by one
     * (the interface kept, so that what is counted at two levels, hdf5_sec2's H5Dread calls
     * and the POSIX calls under them, is told apart past capacity too) */
    uint64_t over_count[DM_IF_N][DM_OP_N];
    int64_t over_bytes[DM_IF_N][DM_OP_N];
    uint64_t over_hist[DM_IF_N][DM_OP_N][DM_HIST_BUCKETS];
    void *over_lock;      /* pthread mutex */
} dm_oplog;

dm_oplog *dm_oplog_create(size_t cap, dm_err *e);
void dm_oplog_free(dm_oplog *L);
void dm_oplog_reset(dm_oplog *L);            /* forget all entries and overflow counts */
void dm_oplog_finalize(dm_oplog *L);         /* convert entries to ns in place */
uint64_t dm_oplog_overflow(const dm_oplog *L);
/* add durations (ns) of finalized entries with op==op (or any op if op<0), and overflow
 * counts, into hist[DM_HIST_BUCKETS] */
void dm_oplog_histogram(const dm_oplog *L, int op, int iface, uint64_t *hist);
int dm_hist_bucket(int64_t ns);
double dm_hist_bucket_lower_ns(int b);

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
static inline uint64_t dm_ticks(void) { return __rdtsc(); }
#define DM_TICKS_ARE_NS 0
#else
#include <time.h>
static inline uint64_t dm_ticks(void) {
    struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
#define DM_TICKS_ARE_NS 1
#endif
int64_t dm_mono_ns(void);
/* Sets the calling thread's time slice under Linux's fair scheduler (EEVDF, 6.12 and later),
 * its policy and nice value kept (ns 0: the kernel's default). Returns the slice the kernel
 * then reports for the thread in ns (0 where it has no slices: Linux before 6.12, real-time
 * policies), or -errno when sched_getattr/sched_setattr refused. */
int64_t dm_thread_slice(uint64_t ns);
/* struct sched_attr as the kernel defines it (include/uapi/linux/sched/types.h); glibc 2.36
 * has no wrapper for sched_getattr/sched_setattr. */
typedef struct {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
    uint32_t util_min, util_max;
} dm_sched_attr;
/* Runs the calling thread under SCHED_FIFO at priority (1-99), its attributes before kept in
 * *was: 0, or -errno (EPERM without CAP_SYS_NICE or an RLIMIT_RTPRIO that allows it). */
int dm_thread_fifo(int priority, dm_sched_attr *was);
/* Gives the calling thread back the attributes *was: 0 or -errno. */
int dm_thread_sched_restore(const dm_sched_attr *was);
/* Whether the calling thread may run at nice (set, then its value back): 0 or -errno. */
int dm_thread_nice_probe(int nice);

/* node_barrier.c: a barrier of one node's processes in shared memory (zeroed before first
 * use), waited on with futexes. arrive adds the caller to the round and returns the round
 * (last: set when the caller completed it); wait spins at most spin_ns, then sleeps until
 * that round is complete, at most timeout_ns: 0 when complete, 1 on timeout (call again). */
typedef struct { uint32_t count, gen; } dm_nbar;
uint32_t dm_nbar_arrive(dm_nbar *b, uint32_t n, int *last);
int dm_nbar_wait(dm_nbar *b, uint32_t round, int64_t spin_ns, int64_t timeout_ns);

void dm_oplog_overflow_add(dm_oplog *L, uint64_t t0, uint64_t t1, int64_t bytes, int op,
                           int iface);

/* Record one operation; t0/t1 are dm_ticks() values. */
static inline void dm_log(dm_oplog *L, uint64_t t0, uint64_t t1, int64_t off, int64_t bytes,
                          int32_t file, int op, int iface) {
    size_t i;
    if (!L || !L->enabled) return;
    if (L->concurrent) i = __atomic_fetch_add(&L->n, 1, __ATOMIC_RELAXED);
    else i = L->n++;
    if (i < L->cap) {
        L->start[i] = (int64_t)(t0 - L->tick0);
        L->dur[i] = (int64_t)(t1 - t0);
        L->offset[i] = off;
        L->bytes[i] = bytes;
        L->file[i] = file;
        L->op[i] = (uint8_t)op;
        L->iface[i] = (uint8_t)iface;
    } else {
        dm_oplog_overflow_add(L, t0, t1, bytes, op, iface);
    }
}

/* ------------------------------------------------------------------ handle lifetime */
/* A handle's read-ahead segments queued or being read. Read-ahead counts a segment in when it
 * is submitted and out when a thread has finished it; a handle is closed only when none is
 * left (its owner waits with dm_inflight_wait; an engine's close refuses otherwise), so that no
 * thread reads through a descriptor closed, or reused by another open, under it. */
typedef struct { uint32_t n; } dm_inflight;
void dm_inflight_add(dm_inflight *c);
void dm_inflight_done(dm_inflight *c);
/* Blocks until no segment of the handle is queued or being read. */
void dm_inflight_wait(dm_inflight *c);
uint32_t dm_inflight_count(const dm_inflight *c);
/* An engine's close while segments are queued: sets e (naming path) and returns -1, else 0. */
int dm_inflight_check_close(const dm_inflight *c, const char *path, dm_err *e);

/* ------------------------------------------------------------------ transfer loop */
/* How an engine moves byte ranges (transfer.c): move() reads (writes) one transfer of len bytes
 * at off into (from) buf and returns the bytes moved, fewer only at the end of the file (a
 * write moves all or fails), or -1 with e set; seek, when not NULL, is called before each
 * range (a STDIO stream's position). Each engine of byte ranges gives its own
 * (dm_posix_transfer, dm_stdio_transfer, dm_mpiio_transfer). */
typedef struct {
    void *handle;
    int64_t (*move)(void *handle, char *buf, int64_t len, int64_t off, dm_err *e);
    int (*seek)(void *handle, int64_t off, dm_err *e);
    /* when not NULL, called first with the whole request (O_DIRECT's alignment) */
    int (*check)(void *handle, size_t n, const int64_t *off, const int64_t *len,
                 const char *buf, int64_t xfer, dm_err *e);
    int op;                 /* DM_OP_READ or DM_OP_WRITE */
    int iface;
    int32_t file_id;
    dm_oplog *log;
    const char *path;
    int64_t xfer;           /* the most bytes of one transfer, 0: a range in one */
    int chained;            /* one tick read per transfer: each starts where the last ended */
    int retry_short;        /* an exact read tries again after a short transfer */
    int discard;            /* reads: the bytes are not kept, every transfer lands at buf (one
                             * transfer's block, which the core's cache keeps) */
} dm_transfer;

/* Move n ranges packed one after another in buf (reads with t->discard: each transfer at buf),
 * each cut into transfers of at most t->xfer bytes, each transfer one op-log entry. Reads:
 * got[i] (if not NULL) receives the bytes of range i, fewer at the end of the file; with exact
 * a short range is a DM_EOF error. *total receives the bytes moved. */
int dm_transfer_ranges(const dm_transfer *t, size_t n, const int64_t *off, const int64_t *len,
                       char *buf, int64_t *got, int exact, int64_t *total, dm_err *e);
/* fsync (fdatasync with data_only) of fd, logged as an operation of file_id through iface */
int dm_sync_fd(int fd, int data_only, dm_oplog *log, int32_t file_id, int iface,
               const char *path, dm_err *e);

/* ------------------------------------------------------------------ POSIX */
/* DM_O_EXCL: a new file (with DM_O_CREATE), failing when any entry, a symbolic link included,
 * holds the name; POSIX and STDIO writes never follow a link at the file's own name */
enum { DM_O_READ = 0, DM_O_WRITE = 1, DM_O_CREATE = 2, DM_O_TRUNC = 4, DM_O_DIRECT = 8,
       DM_O_EXCL = 16 };
enum { DM_ADV_NONE = -1 };   /* else a POSIX_FADV_* value */

typedef struct {
    int fd;
    int flags;              /* DM_O_* */
    int iface;              /* DM_IF_POSIX, _DIRECT or _MMAP */
    int32_t file_id;
    size_t mem_align;       /* O_DIRECT buffer alignment */
    size_t off_align;       /* O_DIRECT offset/length alignment */
    char *map;              /* mmap'ed view (mmap mode) */
    size_t map_len;
    dm_oplog *log;
    dm_inflight inflight;   /* read-ahead segments of this handle not done */
    char path[4096];
} dm_posix;

/* O_DIRECT alignment of a file or directory: statx DIOALIGN where the kernel has it, else the
 * logical block size of the device. Returns 0 and sets *mem, *off, *source ("statx" or
 * "blocksize"). */
int dm_dio_alignment(const char *path, size_t *mem, size_t *off, const char **source, dm_err *e);
/* Check that the file system holding dir accepts O_DIRECT (creates and removes a probe file). */
int dm_dio_probe(const char *dir, dm_err *e);

int dm_posix_open(dm_posix *h, const char *path, int flags, int mmap_mode, int advice,
                  int32_t file_id, dm_oplog *log, dm_err *e);
int dm_posix_close(dm_posix *h, dm_err *e);
int dm_posix_size(dm_posix *h, int64_t *size, dm_err *e);
int dm_posix_fadvise(dm_posix *h, int64_t off, int64_t len, int advice, dm_err *e);
/* The POSIX transfers of op (DM_OP_READ, DM_OP_WRITE), each one pread (looping on short reads
 * and EINTR) or pwrite, or a copy out of the mapping; in O_DIRECT mode offsets, lengths, xfer and
 * the buffer must be aligned. */
dm_transfer dm_posix_transfer(dm_posix *h, int op, int64_t xfer);
int dm_posix_sync(dm_posix *h, int data_only, dm_err *e);
int dm_posix_check_aligned(const dm_posix *h, int64_t off, int64_t len, const void *buf,
                           dm_err *e);

/* ------------------------------------------------------------------ STDIO */
typedef struct {
    FILE *fp;
    char *vbuf;
    int32_t file_id;
    int writing;
    int64_t pos;            /* position known to the stream, -1 unknown */
    dm_oplog *log;
    dm_inflight inflight;   /* read-ahead segments of this handle not done */
    char path[4096];
} dm_stdio;

int dm_stdio_open(dm_stdio *h, const char *path, int flags, size_t bufsize, int32_t file_id,
                  dm_oplog *log, dm_err *e);
int dm_stdio_close(dm_stdio *h, dm_err *e);
/* The STDIO transfers of op: an fseeko where the position changes, then fread or fwrite */
dm_transfer dm_stdio_transfer(dm_stdio *h, int op, int64_t xfer);
/* fflush, then fsync (fdatasync with data_only), logged as its own operation */
int dm_stdio_sync(dm_stdio *h, int data_only, dm_err *e);

/* ------------------------------------------------------------------ io_uring */
/* A file opened as POSIX opens it, read and written through an io_uring of its own with up to
 * depth transfers in flight (uring_engine.c). */
typedef struct {
    dm_posix file;          /* the open file: descriptor, path, file id, op log, in-flight count */
    void *ring;             /* struct io_uring *, NULL when closed */
    int depth;
} dm_uring;

/* Whether this build has liburing (1) or not (0: opening through io_uring is an error). */
int dm_uring_available(void);
int dm_uring_open(dm_uring *h, const char *path, int flags, int depth, int32_t file_id,
                  dm_oplog *log, dm_err *e);
int dm_uring_close(dm_uring *h, dm_err *e);
/* Its reads and writes go through dm_uring_ops: submit queues up to depth transfers on the
 * ring, complete hands them to the kernel, reaps their completions and queues the rest. */

/* ------------------------------------------------------------------ MPI-IO */
typedef struct {
    MPI_File fh;
    MPI_Comm comm;
    int32_t file_id;
    int rank;
    int whole_iface;        /* the op log's interface of opens, closes and syncs: collective on a
                             * communicator of several ranks, as Darshan counts them */
    dm_oplog *log;
    dm_inflight inflight;   /* read-ahead segments of this handle not done */
    char path[4096];
} dm_mpiio;

/* keys/vals: nhints MPI_Info hints (cb_buffer_size, romio_cb_read, ...) */
int dm_mpiio_open(dm_mpiio *h, MPI_Comm comm, const char *path, int flags, int nhints,
                  const char *const *keys, const char *const *vals, int32_t file_id,
                  dm_oplog *log, dm_err *e);
int dm_mpiio_close(dm_mpiio *h, dm_err *e);
int dm_mpiio_size(dm_mpiio *h, int64_t *size, dm_err *e);
/* The independent MPI-IO transfers of op: one MPI_File_read_at (write_at) each, of at most
 * 1 GiB (xfer 0: that) */
dm_transfer dm_mpiio_transfer(dm_mpiio *h, int op, int64_t xfer);
/* collective: every range of the batch in one MPI_File_read_at_all through a file view built
 * from the ranges (sorted by offset) and a memory type that puts each range at its place in buf.
 * Every rank of the communicator must call it; n may be 0. */
int dm_mpiio_read_all(dm_mpiio *h, size_t n, const int64_t *off, const int64_t *len, char *buf,
                      int64_t *total, dm_err *e);
int dm_mpiio_write_all(dm_mpiio *h, size_t n, const int64_t *off, const int64_t *len,
                       const char *buf, int64_t *total, dm_err *e);
/* collective: one contiguous range at an explicit offset through the default view, with no
 * MPI_File_set_view (no wait for the slowest rank in ompio); len 0 joins with nothing */
int dm_mpiio_write_at_all(dm_mpiio *h, int64_t off, int64_t len, const char *buf,
                          int64_t *total, dm_err *e);
int dm_mpiio_read_at_all(dm_mpiio *h, int64_t off, int64_t len, char *buf, int64_t *total,
                         dm_err *e);
int dm_mpiio_sync(dm_mpiio *h, dm_err *e);

/* ------------------------------------------------------------------ HDF5 */
/* SEC2: libhdf5's reads go to the file; CORE: the whole file read into memory at open (as
 * libhdf5's core driver, h5py's driver='core', does) and the reads served from there */
enum { DM_H5_SEC2 = 0, DM_H5_MPIO = 1, DM_H5_CORE = 2 };

/* A field of every sample kept in a dataset of its own beside the rows' dataset (an image's
 * label): its row i belongs to row i, and each read of rows reads the same rows of it after. */
#define DM_H5_FIELDS 8
typedef struct {
    hid_t dset, space, dtype;
    int rank_ndims;
    hsize_t dims[8];
    hsize_t row_elems;
    size_t elem_size;
    int64_t row_bytes;
    char name[256];
} dm_h5_field;

typedef struct {
    hid_t file, dset, space, dtype;
    int driver;              /* DM_H5_SEC2, DM_H5_MPIO or DM_H5_CORE */
    int collective;
    int rank_ndims;
    hsize_t dims[8];
    hsize_t row_elems;       /* elements per index along dimension 0 */
    size_t elem_size;
    int64_t row_bytes;       /* a row's span in a buffer: its bytes and its fields' */
    int64_t own_row_bytes;   /* a row's bytes in the dataset itself */
    int32_t file_id;
    int writing;
    int dset_per_read;       /* the dataset opened anew for each read (its chunk cache empty) */
    int no_chunk_cache;      /* the datasets opened with no chunk cache (rdcc_nbytes 0): a
                              * selection inside a chunk is read from the file alone */
    int nfields;             /* fields read with each read of rows, after the rows, packed in
                              * the buffer after them in this order */
    dm_h5_field field[DM_H5_FIELDS];
    int vlen;                /* rows of variable-length byte sequences (encoded images): read
                              * as libhdf5's sequence descriptors, their bytes out of its global
                              * heap, then given back */
    dm_oplog *log;
    dm_inflight inflight;   /* read-ahead segments of this handle not done */
    char path[4096];
    char name[256];
} dm_h5;

int dm_h5_open(dm_h5 *h, const char *path, const char *dset, int driver, MPI_Comm comm,
               int collective, int writing, int nhints, const char *const *keys,
               const char *const *vals, int32_t file_id, dm_oplog *log, dm_err *e);
/* After dm_h5_open: the datasets of the sample's further fields (reading only; each with as
 * many rows as the dataset), read with each read of rows. */
int dm_h5_open_fields(dm_h5 *h, int nfields, const char *const *fields, dm_err *e);
/* Create file + 2-D-or-more dataset of uint8 (checkpoints, datasets written by the run, tests):
 * dims[0] rows, chunk_rows>0 for a chunked layout, latest=1 for the latest file format (h5py's
 * libver="latest"), else the earliest; exclusive=1 fails when an entry holds the name
 * (H5F_ACC_EXCL: a new file, never through a link), else an existing file is truncated.
 * Collective under DM_H5_MPIO. */
int dm_h5_create(dm_h5 *h, const char *path, const char *dset, int ndims, const hsize_t *dims,
                 hsize_t chunk_rows, int latest, int exclusive, int driver, MPI_Comm comm,
                 int collective, int nhints,
                 const char *const *keys, const char *const *vals, int32_t file_id,
                 dm_oplog *log, dm_err *e);
int dm_h5_close(dm_h5 *h, dm_err *e);
/* Read the rows [start[i], start[i]+count[i]) of dimension 0, for every i, as one union of
 * hyperslabs in one H5Dread. Rows come back in ascending file order (HDF5 selections are sets);
 * overlapping ranges are read once. n may be 0 (a collective call still joins). */
int dm_h5_read_rows(dm_h5 *h, size_t n, const int64_t *start, const int64_t *count, char *buf,
                    int64_t *total, dm_err *e);
/* Read the box [start[d], start[d]+count[d]) of every dimension d (ndims of them, the
 * dataset's rank) in one independent H5Dread into buf (C order). */
int dm_h5_read_box(dm_h5 *h, int ndims, const int64_t *start, const int64_t *count, char *buf,
                   int64_t *total, dm_err *e);
int dm_h5_write_rows(dm_h5 *h, size_t n, const int64_t *start, const int64_t *count,
                     const char *buf, int64_t *total, dm_err *e);
int dm_h5_flush(dm_h5 *h, dm_err *e);
/* Files whose H5Fclose failed with their id still held by HDF5: the process must then end
 * without HDF5's shutdown (hdf5_engine.c). */
int dm_h5_unclosed(void);
/* The logging sec2 driver (h5_logvfd.c): set on a file access property list, it makes libhdf5
 * read and write through pread/pwrite as sec2 does and records each call in log as a POSIX
 * call of file file_id. in_memory (a file opened for reading): the whole file read at open, as
 * libhdf5's core driver reads it, and every later read served from that copy. */
typedef struct { dm_oplog *log; int32_t file_id; int in_memory; } dm_logvfd_info;
int dm_logvfd_set(hid_t fapl, dm_oplog *log, int32_t file_id, int in_memory);
/* HDF5 is not thread-safe in this build: every HDF5 call goes through this lock. */
void dm_h5_lock(void);
void dm_h5_unlock(void);

/* ------------------------------------------------------------------ engine table */
/* How a file is opened, whatever its engine: each engine reads the fields it knows (zero the
 * rest). */
typedef struct {
    const char *path;
    int flags;                  /* DM_O_* */
    int32_t file_id;
    dm_oplog *log;
    MPI_Comm comm;              /* MPI-IO, and HDF5 through the MPI-IO driver */
    int nhints;                 /* MPI_Info hints of MPI-IO and of HDF5's MPI-IO driver */
    const char *const *keys;
    const char *const *vals;
    int mmap_mode;              /* POSIX: reads are copies out of a mapping */
    int advice;                 /* POSIX: a POSIX_FADV_* value for the whole file, or
                                 * DM_ADV_NONE */
    size_t bufsize;             /* STDIO: the stream's buffer, 0 the C library's */
    int depth;                  /* io_uring: transfers in flight */
    const char *dataset;        /* HDF5: the dataset, the file driver (DM_H5_*), and whether */
    int driver;                 /* its transfers are collective */
    int collective;
    int ndims;                  /* HDF5: > 0 creates the file with a dataset of dims (see */
    const hsize_t *dims;        /* dm_h5_create) */
    hsize_t chunk_rows;
    int latest;
    int exclusive;
    int nfields;                /* HDF5: datasets of the samples' further fields (dm_h5_field) */
    const char *const *fields;
} dm_open_args;

/* One read or write through an engine: n ranges (HDF5: rows, off the first and len the count
 * of each) packed one after another in buf, cut into transfers of at most xfer bytes where the
 * engine cuts (0: a range in one). The engine sets total, and got where asked. */
typedef struct {
    int op;                     /* DM_OP_READ or DM_OP_WRITE */
    size_t n;
    const int64_t *off;
    const int64_t *len;
    char *buf;
    int64_t xfer;
    int discard;                /* reads: the bytes are not kept; an engine of byte ranges puts
                                 * every transfer at buf (a buffer of one transfer) */
    int exact;                  /* reads: a range cut short by the end of the file is DM_EOF */
    int64_t *got;               /* reads: the bytes of each range, or NULL */
    int64_t total;              /* bytes moved (a read: short at the end of the file) */
    void *state;                /* an asynchronous engine's request between submit and
                                 * complete */
} dm_io;

/* One struct of operations per engine, in the manner of IOR's backends and fio's ioengine_ops:
 * the handles' base class (dlio_mpi/engines/_handle.pxi) opens, closes, sizes, syncs, reads and
 * writes any engine's file through its table, and read-ahead threads read through it. A read or
 * write is submitted, then completed: an engine that moves bytes synchronously does all of it
 * at submit (complete only hands over what submit found); an asynchronous one queues transfers
 * at submit and reaps them at complete. Adding an engine is its functions and one table. */
typedef struct dm_engine_ops {
    const char *name;
    /* 1 when a handle has a position or a queue that one thread at a time may use (a STDIO
     * stream: fseeko then fread; an io_uring): read-ahead reads such a handle's requests one at
     * a time, in order */
    int ordered;
    /* 1 when an open handle freed without close() is closed then (its rank alone may close
     * it); 0 when closing is collective (MPI-IO, HDF5) and is left to the program */
    int close_when_freed;
    /* 1: reads cut ranges into transfers of at most xfer bytes, each at buf with discard (a
     * buffer of one transfer is enough); 0: a read fills a buffer that holds its ranges */
    int cuts;
    /* h is the engine's own handle (dm_posix, dm_stdio, ...), zeroed or closed */
    int (*open)(void *h, const dm_open_args *a, dm_err *e);
    /* refused while read-ahead segments of the handle are queued (dm_inflight) */
    int (*close)(void *h, dm_err *e);
    int (*size)(void *h, int64_t *size, dm_err *e);
    /* the written bytes made durable, logged as its own operation (data_only: fdatasync where
     * the engine has it) */
    int (*sync)(void *h, int data_only, dm_err *e);
    /* Start io: 0, and complete must then be called once for it; -1 with e set when nothing
     * was started (complete is then not called). */
    int (*submit)(const struct dm_engine_ops *ops, void *h, dm_io *io, dm_err *e);
    /* Wait for io and end it: io->total (and io->got) set, 0 or -1 with e set. */
    int (*complete)(void *h, dm_io *io, dm_err *e);
    /* 0 when a handle's reads cannot run in a thread beside the rank's own (a collective
     * handle: every rank must enter each collective call in the same order); the message
     * names the handle */
    int (*threadable)(const void *h, dm_err *e);
    /* bytes n requested ranges take in the buffer (HDF5: rows times the row's bytes) */
    int64_t (*span)(const void *h, size_t n, const int64_t *len);
    dm_oplog *(*log)(const void *h);
    /* the engine's transfers (engines of byte ranges, moved by dm_ranges_submit), or NULL */
    dm_transfer (*transfer)(void *h, int op, int64_t xfer);
    /* the handle's count of read-ahead segments not done */
    dm_inflight *(*inflight)(void *h);
} dm_engine_ops;

extern const dm_engine_ops dm_posix_ops, dm_stdio_ops, dm_mpiio_ops, dm_h5_ops, dm_uring_ops;

/* What the tables share (engine_table.c): */
/* io submitted, then completed (a caller with nothing to do in between) */
int dm_engine_io(const dm_engine_ops *ops, void *h, dm_io *io, dm_err *e);
/* an engine of byte ranges: io moved at submit by the one transfer loop through
 * ops->transfer */
int dm_ranges_submit(const dm_engine_ops *ops, void *h, dm_io *io, dm_err *e);
/* the completion of an engine that moved the bytes at submit */
int dm_done_at_submit(void *h, dm_io *io, dm_err *e);
/* reads in any thread */
int dm_threadable_always(const void *h, dm_err *e);
/* ranges take their bytes in the buffer */
int64_t dm_span_bytes(const void *h, size_t n, const int64_t *len);

/* ------------------------------------------------------------------ read-ahead */
typedef struct dm_readahead dm_readahead;

/* A request is a batch of segments, each the ranges of one handle read in one engine call.
 * keep: each request's data stays in its slot until released (depth buffers of slot_bytes,
 * the most a request spans); otherwise the bytes are not kept (a loader that does not keep the
 * samples, as the emulator, whose steps discard them): each thread reads into its own buffer
 * of slot_bytes, every transfer at its start (HDF5: a segment's rows packed), reused, so that
 * slot_bytes is the largest transfer (HDF5: the most a segment spans), and a request hands
 * over its byte counts only. Buffers are touched at creation, so that no read pays for the
 * first touch of its memory. The threads run as the creating thread does (readahead.c says
 * why). */
dm_readahead *dm_ra_create(int nthreads, int depth, size_t slot_bytes, size_t align, int keep,
                           dm_err *e);
/* Stops the threads after the queued requests. */
void dm_ra_free(dm_readahead *ra);
typedef struct {
    const dm_engine_ops *ops;
    void *handle;
    size_t n;               /* its ranges: the next n of the request's off/len */
    int64_t xfer;
    int64_t busy_ns;        /* emulated preprocessing after its reads */
    int ordered;            /* read after the earlier segments of its handle (a stream's reads
                             * in order, as one reader of the file issues them), or of its key */
    uintptr_t key;          /* with ordered, non-zero: the segments of one key, not of one
                             * handle, are read one at a time (a file's, whatever handle reads
                             * it); a small number, never a handle's address */
    const dm_open_args *open;   /* non-NULL: the handle is closed, and the thread that reads
                             * the segment opens it with these arguments first and closes it
                             * after, as a loader's worker that opens a file for each sample
                             * does (its span is the closed handle's: an HDF5 handle's row
                             * bytes set beforehand); such a handle is in no other segment,
                             * and its owner neither closes it nor counts it in flight */
} dm_ra_seg;
/* Queue a request of nseg segments (their ranges one after another in off/len) into the next
 * slot of the ring, blocking while that slot is still held. Returns the ticket (>= 0) or -1. */
int64_t dm_ra_submit(dm_readahead *ra, size_t nseg, const dm_ra_seg *segs, const int64_t *off,
                     const int64_t *len, dm_err *e);
/* Wait for a ticket (all its segments); *buf points into its slot until dm_ra_release (NULL
 * without keep), where the request's ranges lie packed over *need bytes (a range cut short by
 * EOF leaves the rest of its place unset); *total is the bytes read. Returns -1 with the
 * request's first error if a segment failed. */
int dm_ra_wait(dm_readahead *ra, int64_t ticket, char **buf, int64_t *need, int64_t *total,
               dm_err *e);
/* The bytes each of the n segments of a done ticket read (before its release). */
int dm_ra_segment_bytes(dm_readahead *ra, int64_t ticket, size_t n, int64_t *got, dm_err *e);
int dm_ra_release(dm_readahead *ra, int64_t ticket, dm_err *e);
size_t dm_ra_slot_bytes(const dm_readahead *ra);
/* Without keep: thread i's buffer (slot_bytes), where its last transfer landed; else NULL. */
const char *dm_ra_thread_buffer(const dm_readahead *ra, int i);
/* Catching up (readahead_setup.c): from now on, the threads run at nice while the request
 * waited for, or the one after the last released, is not read yet (0: never; set back at
 * once). Returns 0, or -errno when the kernel refuses that nice value (the boost is then off).
 * Call from the thread that waits for and releases the requests. */
int dm_ra_boost(dm_readahead *ra, int nice);

/* ------------------------------------------------------------------ status guard */
/* On SIGTERM or SIGINT, even inside a blocking call: write body to final (through tmp and a
 * rename) unless skip_if exists or, with watch_pid > 0, unless process watch_pid is still
 * alive (a rank beside rank 0 marks the run only when rank 0 died); then run the handler that
 * was installed before (Python's). Arm after Python installed its handlers; disarm before the
 * run writes its own status. */
int dm_status_guard_arm(const char *tmp, const char *final, const char *skip_if,
                        const char *body, long watch_pid, dm_err *e);
void dm_status_guard_disarm(void);
/* The other ranks on this host (rank, pid): a guard armed by rank 0 names the one whose process
 * is gone when the signal arrives. */
int dm_status_guard_peers(int n, const int *ranks, const long *pids, dm_err *e);
/* A lock file the armed guard removes on the signal if it still holds record byte for byte
 * (rank 0: the checkpoint folder's lock); an empty path forgets it. */
int dm_status_guard_lock(const char *path, const char *record, dm_err *e);

/* ------------------------------------------------------------------ misc */
void *dm_aligned_alloc(size_t align, size_t bytes);
void dm_aligned_free(void *p);

#ifdef __cplusplus
}
#endif
#endif
