/* io_uring engine: a file opened as POSIX opens it, its reads and writes queued on a ring of
 * its own, up to `depth` transfers in flight, submitted and completed apart (as fio's io_uring
 * engine and applications that read through liburing do). A range is cut into transfers of at
 * most xfer bytes; each transfer is one op-log entry of interface io_uring, from its submission
 * to the reaping of its completion. A short transfer is queued again for the rest; one that
 * returns 0 bytes (a read at the end of the file) ends its range.
 *
 * The engine table's readv runs it too, so that read-ahead threads read through it; a handle's
 * ring is used by one thread at a time (dm_uring_ops.ordered). Built without liburing (no
 * DM_HAVE_URING), opening a file through it is an error that says so. */
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

int dm_uring_ranges(dm_uring *h, size_t n, const int64_t *off, const int64_t *len, int64_t xfer,
                    char *buf, int discard, int writing, int64_t *got, int exact,
                    int64_t *total, dm_err *e) {
    struct io_uring *ring = h->ring;
    dm_posix *p = &h->file;
    *total = 0;
    if (!ring) {
        dm_err_set(e, DM_EARG, "I/O on closed file %s", p->path);
        return -1;
    }
    int64_t *own = NULL;        /* bytes per range, where the caller asks for none but exact */
    if (!got && exact && !writing && n) {
        own = calloc(n, sizeof *own);
        if (!own) {
            dm_err_set(e, DM_ENOMEM, "out of memory for %zu ranges", n);
            return -1;
        }
        got = own;
    }
    if (got) memset(got, 0, n * sizeof *got);
    int depth = h->depth;
    flight *fl = malloc((size_t)depth * sizeof *fl);
    int *free_slots = malloc((size_t)depth * sizeof *free_slots);
    char *ended = calloc(n ? n : 1, 1);     /* a range whose read met the end of the file */
    if (!fl || !free_slots || !ended) {
        free(fl); free(free_slots); free(ended); free(own);
        dm_err_set(e, DM_ENOMEM, "out of memory for %d io_uring transfers", depth);
        return -1;
    }
    for (int s = 0; s < depth; s++) free_slots[s] = depth - 1 - s;
    int nfree = depth, inflight = 0, failed = 0;
    size_t r = 0;               /* the next range to cut */
    int64_t at = 0, pos = 0;    /* bytes of range r queued; where range r lies in buf */
    while (!failed || inflight > 0) {
        /* queue transfers while the ring has room and ranges are left */
        int queued = 0;
        while (!failed && nfree > 0 && r < n) {
            if (at >= len[r] || ended[r]) {
                pos += len[r];
                r++;
                at = 0;
                continue;
            }
            int64_t piece = len[r] - at;
            if (xfer > 0 && piece > xfer) piece = xfer;
            if (piece > (1 << 30)) piece = 1 << 30;
            int slot = free_slots[--nfree];
            flight *f = &fl[slot];
            *f = (flight){(int)r, off[r] + at, piece, discard ? buf : buf + pos + at, 0};
            if (queue(ring, p->fd, f, slot, writing) != 0) {
                nfree++;
                break;
            }
            at += piece;
            queued++;
            inflight++;
        }
        if (queued) {
            /* one call submits and waits for a completion (cached reads complete in it) */
            int rc = io_uring_submit_and_wait(ring, 1);
            if (rc < 0) {
                dm_err_set(e, -rc, "io_uring_submit on %s failed: %s", p->path, strerror(-rc));
                failed = 1;
                /* what was not submitted is not in flight: count the completions due only */
                inflight -= queued;
                if (inflight < 0) inflight = 0;
            }
        }
        if (inflight == 0) {
            if (r >= n || failed) break;
            continue;
        }
        struct io_uring_cqe *cqe;
        int rc = queued ? io_uring_peek_cqe(ring, &cqe) : io_uring_wait_cqe(ring, &cqe);
        if (rc == -EAGAIN) rc = io_uring_wait_cqe(ring, &cqe);
        if (rc == -EINTR) continue;
        if (rc < 0) {
            dm_err_set(e, -rc, "io_uring_wait_cqe on %s failed: %s", p->path, strerror(-rc));
            failed = 1;
            break;          /* the ring is no use now: leave what is in flight to close */
        }
        unsigned head, seen = 0;
        io_uring_for_each_cqe(ring, head, cqe) {
            seen++;
            int slot = (int)io_uring_cqe_get_data64(cqe);
            flight *f = &fl[slot];
            int res = cqe->res;
            uint64_t t1 = dm_ticks();
            inflight--;
            if (res < 0) {
                dm_log(p->log, f->t0, t1, f->off, 0, p->file_id,
                       writing ? DM_OP_WRITE : DM_OP_READ, DM_IF_IO_URING);
                if (!failed)
                    dm_err_set(e, -res, "%s of %lld bytes at offset %lld of %s failed: %s",
                               writing ? "write" : "read", (long long)f->len,
                               (long long)f->off, p->path, strerror(-res));
                failed = 1;
                free_slots[nfree++] = slot;
                continue;
            }
            dm_log(p->log, f->t0, t1, f->off, res, p->file_id,
                   writing ? DM_OP_WRITE : DM_OP_READ, DM_IF_IO_URING);
            *total += res;
            if (got) got[f->range] += res;
            if (res == 0 && !writing) {
                ended[f->range] = 1;        /* the end of the file: the range is done */
                free_slots[nfree++] = slot;
            } else if (res < f->len && !failed) {
                /* a short transfer: its rest queued again at once, on the same slot */
                f->off += res;
                f->len -= res;
                if (!discard) f->dst += res;
                if (queue(ring, p->fd, f, slot, writing) == 0) {
                    inflight++;
                    io_uring_submit(ring);
                } else {
                    free_slots[nfree++] = slot;
                    dm_err_set(e, EBUSY, "no io_uring entry for the rest of a short transfer "
                               "of %s", p->path);
                    failed = 1;
                }
            } else {
                free_slots[nfree++] = slot;
            }
        }
        io_uring_cq_advance(ring, seen);
    }
    int64_t short_range = -1;
    if (!failed && exact && !writing && got) {
        for (size_t i = 0; i < n && short_range < 0; i++)
            if (got[i] < len[i]) short_range = (int64_t)i;
    }
    int64_t short_got = short_range >= 0 ? got[short_range] : 0;
    free(fl);
    free(free_slots);
    free(ended);
    free(own);
    if (failed) return -1;
    if (short_range >= 0) {
        dm_err_set(e, DM_EOF, "read of %lld bytes at offset %lld of %s got %lld",
                   (long long)len[short_range], (long long)off[short_range], p->path,
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

int dm_uring_ranges(dm_uring *h, size_t n, const int64_t *off, const int64_t *len, int64_t xfer,
                    char *buf, int discard, int writing, int64_t *got, int exact,
                    int64_t *total, dm_err *e) {
    (void)n; (void)off; (void)len; (void)xfer; (void)buf; (void)discard; (void)writing;
    (void)got; (void)exact;
    *total = 0;
    dm_err_set(e, DM_EARG, "io_uring is not in this build (%s)", h->file.path);
    return -1;
}

#endif
