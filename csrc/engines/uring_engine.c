/* io_uring engine: a file opened as POSIX opens it, its reads and writes queued on a ring of
 * its own, up to `depth` transfers in flight, submitted and completed apart (as fio's io_uring
 * engine and applications that read through liburing do). A range is cut into transfers of at
 * most xfer bytes; each transfer is one op-log entry of interface io_uring, from its submission
 * to the reaping of its completion. A short transfer is queued again for the rest; one that
 * returns 0 bytes (a read at the end of the file) ends its range.
 *
 * Its table's submit queues a request's first transfers on the ring; complete hands them to the
 * kernel and waits for the first completion in one call (io_uring_submit_and_wait), then reaps
 * completions and queues the rest until the request is done. A handle's ring is used by one
 * thread at a time (dm_uring_ops.ordered). Built without liburing (no DM_HAVE_URING), opening a
 * file through it is an error that says so. */
#define _GNU_SOURCE
#include "dm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#ifdef DM_HAVE_URING
#include <liburing.h>

typedef struct {
    int range;              /* its range, and where the transfer is: */
    int64_t off, len;
    char *dst;
    uint64_t t0;
} flight;

int dm_uring_available(void) { return 1; }

int dm_uring_open(dm_uring *h, const char *path, int flags, int depth, int32_t file_id,
                  dm_oplog *log, dm_err *e) {
    memset(h, 0, sizeof *h);
    if (depth < 1 || depth > 4096) {
        dm_err_set(e, DM_EARG, "io_uring queue depth %d for %s: 1 to 4096", depth, path);
        return -1;
    }
    if (dm_posix_open(&h->file, path, flags, 0, DM_ADV_NONE, file_id, log, e) != 0) return -1;
    struct io_uring *ring = calloc(1, sizeof *ring);
    int rc = ring ? io_uring_queue_init((unsigned)depth, ring, 0) : -ENOMEM;
    if (rc < 0) {
        dm_err_set(e, -rc, "cannot set up an io_uring of depth %d for %s: %s", depth, path,
                   strerror(-rc));
        free(ring);
        dm_err discard;
        dm_posix_close(&h->file, &discard);
        return -1;
    }
    h->ring = ring;
    h->depth = depth;
    return 0;
}

int dm_uring_close(dm_uring *h, dm_err *e) {
    if (dm_inflight_check_close(&h->file.inflight, h->file.path, e) != 0) return -1;
    if (h->ring) {
        io_uring_queue_exit(h->ring);
        free(h->ring);
        h->ring = NULL;
    }
    return dm_posix_close(&h->file, e);
}

/* Queue transfer f on the ring as a read or write; 0, or -errno when no entry was free. */
static int queue(struct io_uring *ring, int fd, flight *f, int slot, int writing) {
    struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
    if (!sqe) return -EBUSY;
    if (writing) io_uring_prep_write(sqe, fd, f->dst, (unsigned)f->len, (uint64_t)f->off);
    else io_uring_prep_read(sqe, fd, f->dst, (unsigned)f->len, (uint64_t)f->off);
    io_uring_sqe_set_data64(sqe, (uint64_t)slot);
    f->t0 = dm_ticks();
    return 0;
}

/* A request between submit and complete: its transfers' slots, and how far its ranges are
 * cut and queued. */
typedef struct {
    flight *fl;
    int *free_slots;
    char *ended;            /* a range whose read met the end of the file */
    int64_t *own;           /* bytes per range, where the caller asks for none but exact */
    int nfree, inflight, failed;
    int queued;             /* queued by submit, not handed to the kernel yet */
    size_t r;               /* the next range to cut */
    int64_t at, pos;        /* bytes of range r queued; where range r lies in buf */
} request;

static void request_free(request *q) {
    free(q->fl);
    free(q->free_slots);
    free(q->ended);
    free(q->own);
    free(q);
}

/* Queue transfers while the ring has room and ranges are left: how many were queued. */
static int fill(dm_uring *h, dm_io *io, request *q) {
    int queued = 0;
    int writing = io->op == DM_OP_WRITE;
    while (!q->failed && q->nfree > 0 && q->r < io->n) {
        size_t r = q->r;
        if (q->at >= io->len[r] || q->ended[r]) {
            q->pos += io->len[r];
            q->r++;
            q->at = 0;
            continue;
        }
        int64_t piece = io->len[r] - q->at;
        if (io->xfer > 0 && piece > io->xfer) piece = io->xfer;
        if (piece > (1 << 30)) piece = 1 << 30;
        int slot = q->free_slots[--q->nfree];
        flight *f = &q->fl[slot];
        *f = (flight){(int)r, io->off[r] + q->at, piece,
                      io->discard ? io->buf : io->buf + q->pos + q->at, 0};
        if (queue(h->ring, h->file.fd, f, slot, writing) != 0) {
            q->nfree++;
            break;
        }
        q->at += piece;
        queued++;
        q->inflight++;
    }
    return queued;
}

/* Submit: the request's first transfers queued on the ring (up to depth); complete hands them
 * to the kernel with the wait for the first completion, in one call. */
static int uring_submit(const dm_engine_ops *ops, void *hp, dm_io *io, dm_err *e) {
    (void)ops;
    dm_uring *h = hp;
    io->total = 0;
    io->state = NULL;
    if (!h->ring) {
        dm_err_set(e, DM_EARG, "I/O on closed file %s", h->file.path);
        return -1;
    }
    size_t n = io->n;
    int depth = h->depth;
    request *q = calloc(1, sizeof *q);
    if (q) {
        q->fl = malloc((size_t)depth * sizeof *q->fl);
        q->free_slots = malloc((size_t)depth * sizeof *q->free_slots);
        q->ended = calloc(n ? n : 1, 1);
    }
    if (!q || !q->fl || !q->free_slots || !q->ended) {
        if (q) request_free(q);
        dm_err_set(e, DM_ENOMEM, "out of memory for %d io_uring transfers", depth);
        return -1;
    }
    if (!io->got && io->exact && io->op == DM_OP_READ && n) {
        q->own = calloc(n, sizeof *q->own);
        if (!q->own) {
            request_free(q);
            dm_err_set(e, DM_ENOMEM, "out of memory for %zu ranges", n);
            return -1;
        }
        io->got = q->own;
    }
    if (io->got) memset(io->got, 0, n * sizeof *io->got);
    for (int s = 0; s < depth; s++) q->free_slots[s] = depth - 1 - s;
    q->nfree = depth;
    q->queued = fill(h, io, q);
    io->state = q;
    return 0;
}

static int uring_complete(void *hp, dm_io *io, dm_err *e) {
    dm_uring *h = hp;
    request *q = io->state;
    struct io_uring *ring = h->ring;
    dm_posix *p = &h->file;
    int writing = io->op == DM_OP_WRITE;
    int64_t *got = io->got;
    io->state = NULL;
    while (!q->failed || q->inflight > 0) {
        /* the first round's transfers were queued at submit */
        int queued = q->queued ? q->queued : fill(h, io, q);
        q->queued = 0;
        if (queued) {
            /* one call submits and waits for a completion (cached reads complete in it) */
            int rc = io_uring_submit_and_wait(ring, 1);
            if (rc < 0) {
                dm_err_set(e, -rc, "io_uring_submit on %s failed: %s", p->path, strerror(-rc));
                q->failed = 1;
                /* what was not submitted is not in flight: count the completions due only */
                q->inflight -= queued;
                if (q->inflight < 0) q->inflight = 0;
            }
        }
        if (q->inflight == 0) {
            if (q->r >= io->n || q->failed) break;
            continue;
        }
        struct io_uring_cqe *cqe;
        int rc = queued ? io_uring_peek_cqe(ring, &cqe) : io_uring_wait_cqe(ring, &cqe);
        if (rc == -EAGAIN) rc = io_uring_wait_cqe(ring, &cqe);
        if (rc == -EINTR) continue;
        if (rc < 0) {
            dm_err_set(e, -rc, "io_uring_wait_cqe on %s failed: %s", p->path, strerror(-rc));
            q->failed = 1;
            break;          /* the ring is no use now: leave what is in flight to close */
        }
        unsigned head, seen = 0;
        io_uring_for_each_cqe(ring, head, cqe) {
            seen++;
            int slot = (int)io_uring_cqe_get_data64(cqe);
            flight *f = &q->fl[slot];
            int res = cqe->res;
            uint64_t t1 = dm_ticks();
            q->inflight--;
            if (res < 0) {
                dm_log(p->log, f->t0, t1, f->off, 0, p->file_id,
                       writing ? DM_OP_WRITE : DM_OP_READ, DM_IF_IO_URING);
                if (!q->failed)
                    dm_err_set(e, -res, "%s of %lld bytes at offset %lld of %s failed: %s",
                               writing ? "write" : "read", (long long)f->len,
                               (long long)f->off, p->path, strerror(-res));
                q->failed = 1;
                q->free_slots[q->nfree++] = slot;
                continue;
            }
            dm_log(p->log, f->t0, t1, f->off, res, p->file_id,
                   writing ? DM_OP_WRITE : DM_OP_READ, DM_IF_IO_URING);
            io->total += res;
            if (got) got[f->range] += res;
            if (res == 0 && !writing) {
                q->ended[f->range] = 1;     /* the end of the file: the range is done */
                q->free_slots[q->nfree++] = slot;
            } else if (res < f->len && !q->failed) {
                /* a short transfer: its rest queued again at once, on the same slot */
                f->off += res;
                f->len -= res;
                if (!io->discard) f->dst += res;
                if (queue(ring, p->fd, f, slot, writing) == 0) {
                    q->inflight++;
                    io_uring_submit(ring);
                } else {
                    q->free_slots[q->nfree++] = slot;
                    dm_err_set(e, EBUSY, "no io_uring entry for the rest of a short transfer "
                               "of %s", p->path);
                    q->failed = 1;
                }
            } else {
                q->free_slots[q->nfree++] = slot;
            }
        }
        io_uring_cq_advance(ring, seen);
    }
    int64_t short_range = -1;
    if (!q->failed && io->exact && !writing && got) {
        for (size_t i = 0; i < io->n && short_range < 0; i++)
            if (got[i] < io->len[i]) short_range = (int64_t)i;
    }
    int64_t short_got = short_range >= 0 ? got[short_range] : 0;
    int failed = q->failed;
    if (q->own) io->got = NULL;
    request_free(q);
    if (failed) return -1;
    if (short_range >= 0) {
        dm_err_set(e, DM_EOF, "read of %lld bytes at offset %lld of %s got %lld",
                   (long long)io->len[short_range], (long long)io->off[short_range], p->path,
                   (long long)short_got);
        return -1;
    }
    return 0;
}

#else   /* built without liburing */

int dm_uring_available(void) { return 0; }

int dm_uring_open(dm_uring *h, const char *path, int flags, int depth, int32_t file_id,
                  dm_oplog *log, dm_err *e) {
    (void)flags; (void)depth; (void)file_id; (void)log;
    memset(h, 0, sizeof *h);
    dm_err_set(e, DM_EARG, "cannot open %s through io_uring: dlio_mpi was built without "
               "liburing (install liburing-dev, then run scripts/setup.sh again)", path);
    return -1;
}

int dm_uring_close(dm_uring *h, dm_err *e) {
    (void)h; (void)e;
    return 0;
}

static int uring_submit(const dm_engine_ops *ops, void *hp, dm_io *io, dm_err *e) {
    (void)ops;
    io->total = 0;
    dm_err_set(e, DM_EARG, "io_uring is not in this build (%s)", ((dm_uring *)hp)->file.path);
    return -1;
}

static int uring_complete(void *hp, dm_io *io, dm_err *e) {
    (void)hp; (void)io; (void)e;
    return 0;
}

#endif

/* ---- the engine's table: a file opened, sized and synced as POSIX does; a handle's ring used
 * by one thread at a time */
static int uring_open(void *h, const dm_open_args *a, dm_err *e) {
    return dm_uring_open(h, a->path, a->flags, a->depth, a->file_id, a->log, e);
}
static int uring_close(void *h, dm_err *e) { return dm_uring_close(h, e); }
static int uring_size(void *h, int64_t *size, dm_err *e) {
    return dm_posix_size(&((dm_uring *)h)->file, size, e);
}
static int uring_sync(void *h, int data_only, dm_err *e) {
    return dm_posix_sync(&((dm_uring *)h)->file, data_only, e);
}
static dm_oplog *uring_log(const void *h) { return ((const dm_uring *)h)->file.log; }
static dm_inflight *uring_inflight(void *h) { return &((dm_uring *)h)->file.inflight; }

const dm_engine_ops dm_uring_ops = {
    .name = "io_uring", .ordered = 1, .close_when_freed = 1, .cuts = 1,
    .open = uring_open, .close = uring_close, .size = uring_size, .sync = uring_sync,
    .submit = uring_submit, .complete = uring_complete,
    .threadable = dm_threadable_always, .span = dm_span_bytes, .log = uring_log,
    .transfer = NULL, .inflight = uring_inflight,
};
