/* What the engines' tables share (each engine's table is at the end of its own file): a read or
 * write submitted then completed, the synchronous submit of the engines of byte ranges through
 * their transfers and the one transfer loop, and their completion, which only hands over what
 * submit did. An entry calls the engine's own functions, so that an operation through the
 * table is the operation the engine makes (same calls, op-log entries and errors). */
#define _GNU_SOURCE
#include "dm.h"

int dm_engine_io(const dm_engine_ops *ops, void *h, dm_io *io, dm_err *e) {
    if (ops->submit(ops, h, io, e) != 0) return -1;
    return ops->complete(h, io, e);
}

int dm_ranges_submit(const dm_engine_ops *ops, void *h, dm_io *io, dm_err *e) {
    dm_transfer t = ops->transfer(h, io->op, io->xfer);
    t.discard = io->discard;
    return dm_transfer_ranges(&t, io->n, io->off, io->len, io->buf, io->got, io->exact,
                              &io->total, e);
}

int dm_done_at_submit(void *h, dm_io *io, dm_err *e) {
    (void)h; (void)io; (void)e;
    return 0;
}

int dm_threadable_always(const void *h, dm_err *e) {
    (void)h; (void)e;
    return 1;
}

int64_t dm_span_bytes(const void *h, size_t n, const int64_t *len) {
    (void)h;
    int64_t s = 0;
    for (size_t i = 0; i < n; i++) s += len[i];
    return s;
}
