/* The transfer loop of every engine's reads and writes of byte ranges: each range cut into
 * transfers of at most xfer bytes, each transfer timed and logged as one operation, a read
 * stopping at the end of the file, and the exact check of a range that had to be read whole.
 * An engine gives the call that moves one transfer (dm_transfer.move). And the logged fsync
 * of a file descriptor, which the engines of byte ranges share. */
#define _GNU_SOURCE
#include "dm.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

int dm_sync_fd(int fd, int data_only, dm_oplog *log, int32_t file_id, int iface,
               const char *path, dm_err *e) {
    uint64_t t0 = dm_ticks();
    int r = data_only ? fdatasync(fd) : fsync(fd);
    uint64_t t1 = dm_ticks();
    if (r != 0) {
        dm_err_set(e, errno, "%s of %s failed: %s", data_only ? "fdatasync" : "fsync", path,
                   strerror(errno));
        return -1;
    }
    dm_log(log, t0, t1, -1, 0, file_id, data_only ? DM_OP_FDATASYNC : DM_OP_FSYNC, iface);
    return 0;
}

int dm_transfer_ranges(const dm_transfer *t, size_t n, const int64_t *off, const int64_t *len,
                       char *buf, int64_t *got, int exact, int64_t *total, dm_err *e) {
    dm_oplog *L = t->log;
    int timed = L && L->enabled;
    int reading = t->op == DM_OP_READ, discard = reading && t->discard;
    int64_t pos = 0, xfer = t->xfer;
    *total = 0;
    if (t->check && t->check(t->handle, n, off, len, buf, xfer, e) != 0) return -1;
    /* chained: one tick read per transfer, each transfer ending where the next one starts */
    uint64_t t0 = timed && t->chained ? dm_ticks() : 0;
    for (size_t i = 0; i < n; i++) {
        int64_t o = off[i], l = len[i], done = 0;
        if (l < 0 || o < 0) {
            dm_err_set(e, DM_EARG, "negative offset or length (%lld, %lld) for %s",
                       (long long)o, (long long)l, t->path);
            return -1;
        }
        if (t->seek && t->seek(t->handle, o, e) != 0) return -1;
        while (done < l) {
            int64_t want = (xfer > 0 && l - done > xfer) ? xfer : l - done;
            if (timed && !t->chained) t0 = dm_ticks();
            int64_t r = t->move(t->handle, discard ? buf : buf + pos + done, want, o + done, e);
            if (r < 0) return -1;
            if (timed) {
                uint64_t t1 = dm_ticks();
                dm_log(L, t0, t1, o + done, r, t->file_id, t->op, t->iface);
                t0 = t1;
            }
            done += r;
            /* the end of the file: a short read, or with retry_short an empty one (a read
             * that must be whole tries again after a short one) */
            if (reading && (r == 0 || (r < want && !(exact && t->retry_short)))) break;
        }
        if (got) got[i] = done;
        *total += done;
        if (reading && exact && done < l) {
            dm_err_set(e, DM_EOF, "unexpected end of file in %s: wanted %lld bytes at offset "
                       "%lld, got %lld", t->path, (long long)l, (long long)o, (long long)done);
            return -1;
        }
        pos += l;
    }
    return 0;
}
