/* Read-ahead: C threads executing a FIFO queue of read requests through the engine table.
 *
 * A request is a batch: segments, each the ranges of one handle (a file's part of the batch)
 * read in one engine call. Request t takes slot t % depth of the ring; submit blocks while that
 * slot is held by an earlier request not yet released. Threads claim segments in submission
 * order, the oldest request's first, so the batch a step waits for is read before later ones
 * and threads share a batch rather than read later ones beside it. A request is handed over
 * whole: its waiter wakes once, when the last segment is done, woken after the mutex is let go
 * (a waiter of higher priority would block at once on it). With keep, a request's segments
 * lie packed in its slot; otherwise the bytes are not kept: each thread reads into its own
 * buffer, every transfer at its start (dm_transfer.discard), a block its core's cache keeps
 * where the ranges' places span a sample or more (the calls the storage sees are the same).
 * The measurements behind these choices are in docs/design.md ("Measurements behind the read
 * path").
 *
 * Idle threads wait on a futex word (an event count), not a condition variable: a submit wakes
 * at most as many as the request has segments and never blocks. glibc's
 * pthread_cond_broadcast can wait for earlier waiters to leave the condition variable, and the
 * rank's thread, under SCHED_FIFO in the step loop, waited there for read threads' time slices.
 *
 * Handles of an engine with a position (ops->ordered: a STDIO stream), and segments asking for
 * it (dm_ra_seg.ordered: a stream's reads of a file, in the order its one reader issues them),
 * take their segments one at a time, in submission order: a thread that claims a segment while
 * an earlier one of the same handle (or key) is being read waits for it.
 *
 * A segment may carry its handle's open (dm_ra_seg.open): the thread opens the file, reads and
 * closes it, as a loader's worker process that opens a file for each sample. Such segments of
 * one file share a key, so that one is open at a time: libhdf5 would otherwise hand a second
 * open of a file already open in the process the first one's state, with no open or metadata
 * read of its own, where each worker process of a real loader opens and reads them.
 *
 * The threads run as the rank's thread does (the same policy and priority), as a data loader's
 * workers do. Niced or SCHED_BATCH threads were tried: on a node with other busy processes
 * (other ranks, other jobs) they got a fraction of a core, and reads that block often (4 KiB
 * O_DIRECT) waited for the others' time slices, many times the epoch's time without read
 * threads. What such priorities were for, that a woken thread not take the core
 * from the rank's thread between its steps, the pipeline gets by queueing the next batches
 * while the step computes (pipeline.computing): a wake-up then costs the emulated accelerator
 * nothing. Under EEVDF (Linux 6.12 and later) the rank's thread asks for a short time slice
 * (io.rank_slice_us) so that, woken at a step's end or in the gradient exchange, it takes a
 * core from read threads at once; the threads set the kernel's default slice back for
 * themselves, as they would otherwise inherit the short one from the thread creating them.
 * A rank whose next batch is behind has its threads catch up (dm_ra_boost, readahead_setup.c).
 */
#define _GNU_SOURCE
#include "readahead_impl.h"

/* Under mu: wait while another thread reads an earlier segment of the same handle. */
static void wait_turn(dm_readahead *ra, int me, const void *handle, uint64_t seq) {
    for (;;) {
        int earlier = 0;
        for (int i = 0; i < ra->nfly && !earlier; i++)
            earlier = i != me && ra->fly[i].active && ra->fly[i].handle == handle &&
                      ra->fly[i].seq < seq;
        if (!earlier) return;
        pthread_cond_wait(&ra->cv_order, &ra->mu);
    }
}

static void preprocess(int64_t ns) {
    struct timespec ts = {ns / 1000000000ll, ns % 1000000000ll};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

void *dm_ra_worker(void *arg) {
    dm_readahead *ra = arg;
    dm_thread_slice(0);     /* the kernel's default slice, not the rank thread's short one */
    pthread_mutex_lock(&ra->mu);
    int me = ra->started++;
    ra->tids[me] = (pid_t)syscall(SYS_gettid);
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, (id_t)ra->tids[me]);
    ra->nice0[me] = errno ? 0 : nice;
    if (ra->started == ra->nfly) pthread_cond_broadcast(&ra->cv_state);
    char *own = ra->keep ? NULL : ra->tbuf[me];
    for (;;) {
        while (!ra->stop && ra->next_pick >= ra->next_submit) {
            uint32_t seen = __atomic_load_n(&ra->work_seq, __ATOMIC_ACQUIRE);
            ra->idle++;
            pthread_mutex_unlock(&ra->mu);
            syscall(SYS_futex, &ra->work_seq, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
            pthread_mutex_lock(&ra->mu);
            ra->idle--;
        }
        if (ra->next_pick >= ra->next_submit && ra->stop) break;
        slot_t *s = &ra->slots[ra->next_pick % ra->depth];
        seg_t *g = &s->segs[s->claimed++];
        if (s->claimed == s->nseg) ra->next_pick++;
        uint64_t seq = ra->seq++;
        int ordered = g->seg.ops->ordered || g->seg.ordered;
        const void *turn = g->seg.ordered && g->seg.key ? (const void *)g->seg.key
                                                        : g->seg.handle;
        if (ordered) {
            ra->fly[me] = (inflight_t){turn, seq, 1};
            wait_turn(ra, me, turn, seq);
        }
        int skip = s->failed;           /* an earlier segment failed: the request has */
        pthread_mutex_unlock(&ra->mu);

        dm_err err;
        int64_t got = 0;
        int rc = 0;
        if (!skip) {
            dm_err_clear(&err);
            char *dst = own ? own : s->buf + g->bufpos;
            dm_io io = {.op = DM_OP_READ, .n = g->seg.n, .off = s->off + g->first,
                        .len = s->len + g->first, .buf = dst, .xfer = g->seg.xfer,
                        .discard = own != NULL};
            const dm_open_args *open = g->seg.open;
            rc = open ? g->seg.ops->open(g->seg.handle, open, &err) : 0;
            if (rc == 0) {
                rc = dm_engine_io(g->seg.ops, g->seg.handle, &io, &err);
                got = io.total;
                if (open) {     /* closed as the worker's own open is: the read's error first */
                    dm_err cerr;
                    dm_err_clear(&cerr);
                    if (g->seg.ops->close(g->seg.handle, &cerr) != 0 && rc == 0) {
                        rc = -1;
                        err = cerr;
                    }
                }
            }
            /* the worker preprocesses the samples before handing them over */
            if (rc == 0 && g->seg.busy_ns > 0) preprocess(g->seg.busy_ns);
        }

        /* the handle is not touched after this: its owner may close it */
        if (!g->seg.open) dm_inflight_done(g->seg.ops->inflight(g->seg.handle));
        pthread_mutex_lock(&ra->mu);
        if (ordered) {
            ra->fly[me].active = 0;
            pthread_cond_broadcast(&ra->cv_order);
        }
        g->got = got;
        s->total += got;
        if (rc != 0 && !s->failed) {
            s->failed = 1;
            s->err = err;
        }
        if (++s->finished == s->nseg) {
            s->state = SLOT_DONE;
            /* woken after the unlock: a waiter running at a higher priority (the rank's
             * thread in the step loop) would otherwise block at once on the mutex held here */
            pthread_mutex_unlock(&ra->mu);
            pthread_cond_broadcast(&ra->cv_state);
            pthread_mutex_lock(&ra->mu);
        }
    }
    pthread_mutex_unlock(&ra->mu);
    return NULL;
}

/* Make room for want elements of size bytes in *p (capacity *cap). */
static int reserve(void **p, size_t *cap, size_t want, size_t size) {
    if (*cap >= want) return 0;
    size_t c = want < 16 ? 16 : want;
    void *q = realloc(*p, c * size);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

/* The largest of n ranges' transfers of at most xfer bytes (0: a range in one). */
static int64_t largest_transfer(size_t n, const int64_t *len, int64_t xfer) {
    int64_t most = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t t = xfer > 0 && len[i] > xfer ? xfer : len[i];
        if (t > most) most = t;
    }
    return most;
}

int64_t dm_ra_submit(dm_readahead *ra, size_t nseg, const dm_ra_seg *segs, const int64_t *off,
                     const int64_t *len, dm_err *e) {
    size_t n = 0;
    int64_t need = 0, widest = 0;
    if (nseg == 0) {
        dm_err_set(e, DM_EARG, "a read-ahead request needs at least one segment");
        return -1;
    }
    for (size_t k = 0; k < nseg; k++) {
        const dm_ra_seg *g = &segs[k];
        if (!g->ops->threadable(g->handle, e)) return -1;
        int64_t span = g->ops->span(g->handle, g->n, len + n);
        need += span;
        /* without keep, a thread's buffer holds a transfer (HDF5: the segment's rows) */
        int64_t room = g->ops->cuts ? largest_transfer(g->n, len + n, g->xfer) : span;
        if (room > widest) widest = room;
        n += g->n;
        dm_oplog *log = g->open ? g->open->log : g->ops->log(g->handle);
        if (log && !log->concurrent) __atomic_store_n(&log->concurrent, 1, __ATOMIC_SEQ_CST);
    }
    int64_t most = ra->keep ? need : widest;
    if (most > (int64_t)ra->slot_bytes) {
        dm_err_set(e, DM_EARG, ra->keep ? "a read-ahead request of %lld bytes exceeds the "
                   "%zu-byte slots" : "a read-ahead transfer of %lld bytes exceeds the "
                   "threads' %zu-byte buffers", (long long)most, ra->slot_bytes);
        return -1;
    }
    pthread_mutex_lock(&ra->mu);
    int64_t t = ra->next_submit;
    slot_t *s = &ra->slots[t % ra->depth];
    while (s->state != SLOT_FREE) pthread_cond_wait(&ra->cv_state, &ra->mu);
    if (reserve((void **)&s->off, &s->cap_off, n, sizeof *s->off) != 0 ||
        reserve((void **)&s->len, &s->cap_len, n, sizeof *s->len) != 0 ||
        reserve((void **)&s->segs, &s->segcap, nseg, sizeof *s->segs) != 0) {
        pthread_mutex_unlock(&ra->mu);
        dm_err_set(e, DM_ENOMEM, "out of memory for a request of %zu ranges", n);
        return -1;
    }
    if (n) {
        memcpy(s->off, off, n * sizeof *off);
        memcpy(s->len, len, n * sizeof *len);
    }
    size_t first = 0;
    int64_t pos = 0;
    for (size_t k = 0; k < nseg; k++) {
        seg_t *g = &s->segs[k];
        g->seg = segs[k];
        g->first = first;
        g->bufpos = pos;
        g->got = 0;
        pos += segs[k].ops->span(segs[k].handle, segs[k].n, len + first);
        first += segs[k].n;
    }
    /* counted in before any thread can take them: the handles' owners wait for these
     * before closing */
    for (size_t k = 0; k < nseg; k++)
        if (!segs[k].open) dm_inflight_add(segs[k].ops->inflight(segs[k].handle));
    s->n = n;
    s->nseg = nseg;
    s->claimed = s->finished = 0;
    s->ticket = t;
    s->need = need;
    s->total = 0;
    s->failed = 0;
    s->state = SLOT_QUEUED;
    ra->next_submit = t + 1;
    __atomic_add_fetch(&ra->work_seq, 1, __ATOMIC_RELEASE);
    int wake = ra->idle < (int)nseg ? ra->idle : (int)nseg;
    pthread_mutex_unlock(&ra->mu);
    if (wake > 0) syscall(SYS_futex, &ra->work_seq, FUTEX_WAKE_PRIVATE, wake, NULL, NULL, 0);
    return t;
}

static slot_t *slot_of(dm_readahead *ra, int64_t ticket, dm_err *e) {
    if (ticket < 0 || ticket >= ra->next_submit || ra->slots[ticket % ra->depth].ticket != ticket
        || ra->slots[ticket % ra->depth].state == SLOT_FREE) {
        dm_err_set(e, DM_EARG, "read-ahead ticket %lld is not pending", (long long)ticket);
        return NULL;
    }
    return &ra->slots[ticket % ra->depth];
}

int dm_ra_wait(dm_readahead *ra, int64_t ticket, char **buf, int64_t *need, int64_t *total,
               dm_err *e) {
    pthread_mutex_lock(&ra->mu);
    slot_t *s = slot_of(ra, ticket, e);
    if (!s) { pthread_mutex_unlock(&ra->mu); return -1; }
    if (s->state != SLOT_DONE && ra->boost_nice && !ra->boosted) {
        pthread_mutex_unlock(&ra->mu);
        dm_ra_catch_up(ra, 1);
        pthread_mutex_lock(&ra->mu);
    }
    while (s->state != SLOT_DONE) pthread_cond_wait(&ra->cv_state, &ra->mu);
    int failed = s->failed;
    if (failed && e) *e = s->err;
    *buf = s->buf;
    *need = s->need;
    *total = s->total;
    pthread_mutex_unlock(&ra->mu);
    return failed ? -1 : 0;
}

int dm_ra_segment_bytes(dm_readahead *ra, int64_t ticket, size_t n, int64_t *got, dm_err *e) {
    pthread_mutex_lock(&ra->mu);
    slot_t *s = slot_of(ra, ticket, e);
    if (!s || s->state != SLOT_DONE || n != s->nseg) {
        if (s) dm_err_set(e, DM_EARG, "read-ahead ticket %lld: %zu segments asked, %zu done",
                          (long long)ticket, n, s->state == SLOT_DONE ? s->nseg : 0);
        pthread_mutex_unlock(&ra->mu);
        return -1;
    }
    for (size_t k = 0; k < n; k++) got[k] = s->segs[k].got;
    pthread_mutex_unlock(&ra->mu);
    return 0;
}

int dm_ra_release(dm_readahead *ra, int64_t ticket, dm_err *e) {
    pthread_mutex_lock(&ra->mu);
    slot_t *s = slot_of(ra, ticket, e);
    if (!s) { pthread_mutex_unlock(&ra->mu); return -1; }
    while (s->state != SLOT_DONE) pthread_cond_wait(&ra->cv_state, &ra->mu);
    s->state = SLOT_FREE;
    pthread_cond_broadcast(&ra->cv_state);
    /* the request the next step takes: queued and not read yet, its threads catch up */
    const slot_t *nx = &ra->slots[(ticket + 1) % ra->depth];
    int behind = ticket + 1 < ra->next_submit && nx->ticket == ticket + 1 &&
                 nx->state != SLOT_DONE;
    pthread_mutex_unlock(&ra->mu);
    dm_ra_catch_up(ra, behind);
    return 0;
}
