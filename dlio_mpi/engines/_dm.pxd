# C declarations of csrc/dm.h, the native engines.
from libc.stdint cimport int64_t, int32_t, uint32_t, uint64_t, uint8_t, uintptr_t
from mpi4py.libmpi cimport MPI_Comm

cdef extern from "dm.h" nogil:
    ctypedef struct dm_err:
        int code
        char msg[768]

    int DM_EOF, DM_EALIGN, DM_EMPI, DM_EHDF5, DM_EARG, DM_ENOMEM
    int DM_HIST_BUCKETS
    enum: DM_OP_READ
    enum: DM_OP_WRITE
    enum: DM_OP_N
    enum: DM_IF_N
    int DM_O_READ, DM_O_WRITE, DM_O_CREATE, DM_O_TRUNC, DM_O_DIRECT, DM_O_EXCL
    int DM_H5_SEC2, DM_H5_MPIO, DM_H5_CORE

    ctypedef struct dm_oplog:
        int64_t *start
        int64_t *dur
        int64_t *offset
        int64_t *bytes
        int32_t *file
        uint8_t *op
        uint8_t *iface
        size_t cap
        size_t n
        size_t nconv
        int concurrent
        int enabled
        int64_t mono0_ns
        double ns_per_tick
        uint64_t over_count[DM_IF_N][DM_OP_N]
        int64_t over_bytes[DM_IF_N][DM_OP_N]

    dm_oplog *dm_oplog_create(size_t cap, dm_err *e)
    void dm_oplog_free(dm_oplog *L)
    void dm_oplog_reset(dm_oplog *L)
    void dm_oplog_finalize(dm_oplog *L)
    uint64_t dm_oplog_overflow(const dm_oplog *L)
    void dm_oplog_histogram(const dm_oplog *L, int op, int iface, uint64_t *hist)
    int dm_hist_bucket(int64_t ns)
    double dm_hist_bucket_lower_ns(int b)
    int64_t dm_mono_ns()
    int64_t dm_thread_slice(uint64_t ns)
    ctypedef struct dm_sched_attr:
        uint32_t policy
    int dm_thread_fifo(int priority, dm_sched_attr *was)
    int dm_thread_sched_restore(const dm_sched_attr *was)
    int dm_thread_nice_probe(int nice)
    ctypedef struct dm_nbar:
        uint32_t count
        uint32_t gen
    uint32_t dm_nbar_arrive(dm_nbar *b, uint32_t n, int *last)
    int dm_nbar_wait(dm_nbar *b, uint32_t round, int64_t spin_ns, int64_t timeout_ns)


    ctypedef struct dm_posix:
        int fd
        int flags
        int iface
        size_t mem_align
        size_t off_align
        size_t map_len
        char path[4096]

    int dm_dio_alignment(const char *path, size_t *mem, size_t *off, const char **source,
                         dm_err *e)
    int dm_status_guard_arm(const char *tmp, const char *final, const char *skip_if,
                            const char *body, long watch_pid, dm_err *e)
    void dm_status_guard_disarm()
    int dm_status_guard_peers(int n, const int *ranks, const long *pids, dm_err *e)
    int dm_status_guard_lock(const char *path, const char *record, dm_err *e)
    int dm_dio_probe(const char *dir, dm_err *e)
    int dm_posix_fadvise(dm_posix *h, int64_t off, int64_t len, int advice, dm_err *e)

    ctypedef struct dm_uring:
        dm_posix file
        void *ring
        int depth

    int dm_uring_available()

    ctypedef struct FILE
    ctypedef struct dm_stdio:
        FILE *fp
        char path[4096]


    ctypedef struct dm_mpiio:
        int rank
        char path[4096]

    int dm_mpiio_read_all(dm_mpiio *h, size_t n, const int64_t *off, const int64_t *len,
                          char *buf, int64_t *total, dm_err *e)
    int dm_mpiio_write_all(dm_mpiio *h, size_t n, const int64_t *off, const int64_t *len,
                           const char *buf, int64_t *total, dm_err *e)
    int dm_mpiio_write_at_all(dm_mpiio *h, int64_t off, int64_t len, const char *buf,
                              int64_t *total, dm_err *e)
    int dm_mpiio_read_at_all(dm_mpiio *h, int64_t off, int64_t len, char *buf,
                             int64_t *total, dm_err *e)

    ctypedef unsigned long long hsize_t
    ctypedef struct dm_h5:
        int driver
        int collective
        int rank_ndims
        hsize_t dims[8]
        hsize_t row_elems
        size_t elem_size
        int64_t row_bytes
        int dset_per_read
        int no_chunk_cache
        char path[4096]

    int dm_h5_read_box(dm_h5 *h, int ndims, const int64_t *start, const int64_t *count,
                       char *buf, int64_t *total, dm_err *e)
    int dm_h5_unclosed()

    ctypedef struct dm_inflight:
        uint32_t n
    void dm_inflight_wait(dm_inflight *c)
    uint32_t dm_inflight_count(const dm_inflight *c)

    ctypedef struct dm_open_args:
        const char *path
        int flags
        int32_t file_id
        dm_oplog *log
        MPI_Comm comm
        int nhints
        const char *const *keys
        const char *const *vals
        int mmap_mode
        int advice
        size_t bufsize
        int depth
        const char *dataset
        int driver
        int collective
        int ndims
        const hsize_t *dims
        hsize_t chunk_rows
        int latest
        int exclusive
        int nfields
        const char *const *fields

    ctypedef struct dm_io:
        int op
        size_t n
        const int64_t *off
        const int64_t *len
        char *buf
        int64_t xfer
        int discard
        int exact
        int64_t *got
        int64_t total
        void *state

    ctypedef struct dm_engine_ops:
        const char *name
        int close_when_freed
        int (*open)(void *h, const dm_open_args *a, dm_err *e) noexcept nogil
        int (*close)(void *h, dm_err *e) noexcept nogil
        int (*size)(void *h, int64_t *size, dm_err *e) noexcept nogil
        int (*sync)(void *h, int data_only, dm_err *e) noexcept nogil
        int (*submit)(const dm_engine_ops *ops, void *h, dm_io *io, dm_err *e) noexcept nogil
        int (*complete)(void *h, dm_io *io, dm_err *e) noexcept nogil
        dm_inflight *(*inflight)(void *h) noexcept nogil
    int dm_engine_io(const dm_engine_ops *ops, void *h, dm_io *io, dm_err *e)
    const dm_engine_ops dm_posix_ops, dm_stdio_ops, dm_mpiio_ops, dm_h5_ops, dm_uring_ops

    ctypedef struct dm_readahead
    ctypedef struct dm_ra_seg:
        const dm_engine_ops *ops
        void *handle
        size_t n
        int64_t xfer
        int64_t busy_ns
        int ordered
        uintptr_t key
        const dm_open_args *open
    dm_readahead *dm_ra_create(int nthreads, int depth, size_t slot_bytes, size_t align,
                               int keep, dm_err *e)
    void dm_ra_free(dm_readahead *ra)
    int64_t dm_ra_submit(dm_readahead *ra, size_t nseg, const dm_ra_seg *segs,
                         const int64_t *off, const int64_t *len, dm_err *e)
    int dm_ra_wait(dm_readahead *ra, int64_t ticket, char **buf, int64_t *need, int64_t *total,
                   dm_err *e)
    int dm_ra_segment_bytes(dm_readahead *ra, int64_t ticket, size_t n, int64_t *got,
                            dm_err *e)
    int dm_ra_release(dm_readahead *ra, int64_t ticket, dm_err *e)
    size_t dm_ra_slot_bytes(const dm_readahead *ra)
    const char *dm_ra_thread_buffer(const dm_readahead *ra, int i)
    int dm_ra_boost(dm_readahead *ra, int nice)

cdef extern from "steploop.h" nogil:
    ctypedef struct dm_epoch:
        int64_t nsteps
        const int64_t *step_seg
        const int64_t *seg_slot
        const int64_t *seg_range
        const int64_t *seg_busy
        const int64_t *range_at
        const int64_t *offs
        const int64_t *lens
        const int64_t *wants
        int ordered
        const dm_engine_ops **ops
        void **hp
        int64_t xfer
        int64_t *want
        dm_ra_seg *segs
        int64_t *off
        int64_t *len
    int64_t dm_epoch_submit(dm_readahead *ra, dm_epoch *ep, int64_t step, dm_err *e)
    enum: DM_PH_START
    enum: DM_PH_FILL
    enum: DM_PH_WAIT
    enum: DM_STEPS_BOOST_NICE
    enum: DM_STEPS_DONE
    enum: DM_STEPS_CHECK
    enum: DM_STEPS_PREPARE
    enum: DM_STEPS_EXCHANGE
    enum: DM_STEPS_SHORT
    enum: DM_STEPS_ERROR
    ctypedef struct dm_steps:
        dm_readahead *ra
        dm_epoch *ep
        int64_t ticket0
        int64_t ahead
        int64_t nsub
        int64_t step
        int phase
        uint8_t *prepare
        const int64_t *sleep_ns
        int64_t defer_ns
        dm_nbar *bar
        uint32_t nbar
        int64_t spin_ns
        int64_t check_ns
        int sync_first
        int64_t t_start
        int64_t t_end
        int rt_priority
        int rt_on
        double *wait_s
        double *compute_s
        double *exchange_s
        int64_t got
        int arrived
    int dm_steps_run(dm_steps *s, dm_err *e)
    void dm_steps_leave(dm_steps *s)
