/* Read-ahead: C threads executing a FIFO queue of read requests, through the engine table
 * (any engine's handle), into a ring of aligned buffers (keep), or each into its own reused
 * buffer. Request t goes to slot t % depth; submit blocks while that slot is held by an
 * earlier request that has not been released.
 *
 * A handle of an engine whose handles have a position (ops->ordered: a STDIO stream, which
 * one thread at a time may use) takes its requests one at a time, in submission order: a
 * thread that picks a request while an earlier one of the same handle is still being read
 * waits for it. Other handles' requests run side by side. */
#define _GNU_SOURCE
#include "dm.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The workers' niceness above the rank's own thread: when the rank's thread wakes (its batch
 * is in, or its compute step is over) it runs at once instead of waiting for a time slice
 * behind workers that keep reading ahead. */
#define DM_RA_NICE 10

enum { SLOT_FREE = 0, SLOT_QUEUED, SLOT_BUSY, SLOT_DONE };

typedef struct {
    int state;
    int64_t ticket;
    const dm_engine_ops *ops;
    void *handle;
    size_t n, cap;
    int64_t *off, *len;
    int64_t xfer;
    int64_t busy_ns;        /* emulated processing after the read (preprocessing) */
    char *buf;
    int64_t need;           /* bytes the request spans in its slot */
    int64_t total;
    int failed;
    dm_err err;
} slot_t;

struct dm_readahead {
    pthread_mutex_t mu;
    pthread_cond_t cv_work;     /* workers wait for a queued request */
    pthread_cond_t cv_state;    /* submitters and waiters wait for a slot state change */
    pthread_t *threads;
    int nthreads;
    int started;                /* threads that took their buffer */
    char **tbuf;                /* without keep: one buffer per thread */
    int keep;
    int depth;
    size_t slot_bytes;
    slot_t *slots;
    int64_t next_submit;
    int64_t next_pick;
    int stop;
    struct { const void *handle; int64_t ticket; int active; } *fly;   /* per thread */
};

/* Under mu: wait while another thread reads an earlier request of the same handle. */
static void wait_turn(dm_readahead *ra, int me, const void *handle, int64_t ticket) {
    for (;;) {
        int earlier = 0;
        for (int i = 0; i < ra->nthreads; i++)
            if (i != me && ra->fly[i].active && ra->fly[i].handle == handle &&
                ra->fly[i].ticket < ticket)
                earlier = 1;
        if (!earlier) return;
        pthread_cond_wait(&ra->cv_state, &ra->mu);
    }
}

static void *worker(void *arg) {
    dm_readahead *ra = arg;
    /* per thread on Linux (a thread id is a process id to setpriority); failure is harmless */
    int base = getpriority(PRIO_PROCESS, 0);
    (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), base + DM_RA_NICE);
    pthread_mutex_lock(&ra->mu);
    int me = ra->started++;
    char *own = ra->keep ? NULL : ra->tbuf[me];
    for (;;) {
        while (!ra->stop && ra->next_pick >= ra->next_submit)
            pthread_cond_wait(&ra->cv_work, &ra->mu);
        if (ra->next_pick >= ra->next_submit && ra->stop) break;
        int64_t t = ra->next_pick++;
        slot_t *s = &ra->slots[t % ra->depth];
        s->state = SLOT_BUSY;
        int ordered = s->ops->ordered;
        if (ordered) {
            ra->fly[me].handle = s->handle;
            ra->fly[me].ticket = t;
            ra->fly[me].active = 1;
            wait_turn(ra, me, s->handle, t);
        }
        pthread_mutex_unlock(&ra->mu);

        dm_err_clear(&s->err);
        char *dst = own ? own : s->buf;
        int rc = s->ops->readv(s->handle, s->n, s->off, s->len, s->xfer, dst, &s->total,
                               &s->err);

        if (rc == 0 && s->busy_ns > 0) {
            /* the worker preprocesses the sample before handing it over */
            struct timespec ts = {s->busy_ns / 1000000000ll, s->busy_ns % 1000000000ll};
            while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
        }
        pthread_mutex_lock(&ra->mu);
        if (ordered) ra->fly[me].active = 0;
        s->failed = rc != 0;
        s->state = SLOT_DONE;
        pthread_cond_broadcast(&ra->cv_state);
    }
    pthread_mutex_unlock(&ra->mu);
    return NULL;
}

static char *touched(size_t align, size_t bytes) {
    char *b = dm_aligned_alloc(align, bytes);
    if (b) memset(b, 0, bytes);
    return b;
}

dm_readahead *dm_ra_create(int nthreads, int depth, size_t slot_bytes, size_t align, int keep,
                           dm_err *e) {
    if (nthreads < 1 || depth < 1 || slot_bytes == 0) {
        dm_err_set(e, DM_EARG, "read-ahead needs at least 1 thread, depth 1 and a slot size "
                   "(got %d threads, depth %d, %zu bytes)", nthreads, depth, slot_bytes);
        return NULL;
    }
    if (align < 64) align = 64;
    dm_readahead *ra = calloc(1, sizeof *ra);
    if (!ra) goto nomem;
    ra->slots = calloc((size_t)depth, sizeof(slot_t));
    ra->threads = calloc((size_t)nthreads, sizeof(pthread_t));
    ra->tbuf = calloc((size_t)nthreads, sizeof(char *));
    ra->fly = calloc((size_t)nthreads, sizeof *ra->fly);
    if (!ra->slots || !ra->threads || !ra->tbuf || !ra->fly) goto nomem_free;
    ra->depth = depth;
    ra->slot_bytes = slot_bytes;
    ra->keep = keep;
    size_t bytes = (slot_bytes + align - 1) / align * align;
    for (int i = 0; i < depth; i++) {
        ra->slots[i].ticket = -1;
        if (keep && !(ra->slots[i].buf = touched(align, bytes))) goto nomem_free;
    }
    for (int i = 0; i < nthreads && !keep; i++)
        if (!(ra->tbuf[i] = touched(align, bytes))) goto nomem_free;
    pthread_mutex_init(&ra->mu, NULL);
    pthread_cond_init(&ra->cv_work, NULL);
    pthread_cond_init(&ra->cv_state, NULL);
    for (int i = 0; i < nthreads; i++) {
        if (pthread_create(&ra->threads[i], NULL, worker, ra) != 0) {
            dm_err_set(e, DM_ENOMEM, "cannot start read-ahead thread %d", i);
            ra->nthreads = i;
            dm_ra_free(ra);
            return NULL;
        }
        ra->nthreads = i + 1;
    }
    return ra;
nomem_free:
    if (ra->slots)
        for (int i = 0; i < depth; i++) dm_aligned_free(ra->slots[i].buf);
    if (ra->tbuf)
        for (int i = 0; i < nthreads; i++) dm_aligned_free(ra->tbuf[i]);
    free(ra->tbuf);
    free(ra->fly);
    free(ra->slots);
    free(ra->threads);
    free(ra);
nomem:
    dm_err_set(e, DM_ENOMEM, "cannot allocate read-ahead buffers of %d x %zu bytes",
               keep ? depth : nthreads, slot_bytes);
    return NULL;
}

void dm_ra_free(dm_readahead *ra) {
    if (!ra) return;
    pthread_mutex_lock(&ra->mu);
    ra->stop = 1;
    pthread_cond_broadcast(&ra->cv_work);
    pthread_mutex_unlock(&ra->mu);
    for (int i = 0; i < ra->nthreads; i++) pthread_join(ra->threads[i], NULL);
    for (int i = 0; i < ra->depth; i++) {
        dm_aligned_free(ra->slots[i].buf);
        free(ra->slots[i].off);
        free(ra->slots[i].len);
    }
    for (int i = 0; i < ra->nthreads && !ra->keep; i++) dm_aligned_free(ra->tbuf[i]);
    free(ra->tbuf);
    free(ra->fly);
    pthread_mutex_destroy(&ra->mu);
    pthread_cond_destroy(&ra->cv_work);
    pthread_cond_destroy(&ra->cv_state);
    free(ra->slots);
    free(ra->threads);
    free(ra);
}

size_t dm_ra_slot_bytes(const dm_readahead *ra) { return ra->slot_bytes; }

int64_t dm_ra_submit(dm_readahead *ra, const dm_engine_ops *ops, void *handle, size_t n,
                     const int64_t *off, const int64_t *len, int64_t xfer, int64_t busy_ns,
                     dm_err *e) {
    if (!ops->threadable(handle, e)) return -1;
    int64_t need = ops->span(handle, n, len);
    dm_oplog *log = ops->log(handle);
    if (need > (int64_t)ra->slot_bytes) {
        dm_err_set(e, DM_EARG, "a read-ahead request of %lld bytes exceeds the %zu-byte slots",
                   (long long)need, ra->slot_bytes);
        return -1;
    }
    if (log) __atomic_store_n(&log->concurrent, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_lock(&ra->mu);
    int64_t t = ra->next_submit;
    slot_t *s = &ra->slots[t % ra->depth];
    while (s->state != SLOT_FREE) pthread_cond_wait(&ra->cv_state, &ra->mu);
    if (s->cap < n) {
        size_t c = n < 16 ? 16 : n;
        int64_t *o = realloc(s->off, c * sizeof *o);
        if (o) s->off = o;
        int64_t *l = realloc(s->len, c * sizeof *l);
        if (l) s->len = l;
        if (!o || !l) {
            pthread_mutex_unlock(&ra->mu);
            dm_err_set(e, DM_ENOMEM, "out of memory for a request of %zu ranges", n);
            return -1;
        }
        s->cap = c;
    }
    if (n) {
        memcpy(s->off, off, n * sizeof *off);
        memcpy(s->len, len, n * sizeof *len);
    }
    s->n = n;
    s->ops = ops;
    s->handle = handle;
    s->xfer = xfer;
    s->busy_ns = busy_ns;
    s->ticket = t;
    s->need = need;
    s->total = 0;
    s->failed = 0;
    s->state = SLOT_QUEUED;
    ra->next_submit = t + 1;
    pthread_cond_signal(&ra->cv_work);
    pthread_mutex_unlock(&ra->mu);
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
    while (s->state != SLOT_DONE) pthread_cond_wait(&ra->cv_state, &ra->mu);
    int failed = s->failed;
    if (failed && e) *e = s->err;
    *buf = s->buf;
    *need = s->need;
    *total = s->total;
    pthread_mutex_unlock(&ra->mu);
    return failed ? -1 : 0;
}

int dm_ra_release(dm_readahead *ra, int64_t ticket, dm_err *e) {
    pthread_mutex_lock(&ra->mu);
    slot_t *s = slot_of(ra, ticket, e);
    if (!s) { pthread_mutex_unlock(&ra->mu); return -1; }
    while (s->state != SLOT_DONE) pthread_cond_wait(&ra->cv_state, &ra->mu);
    s->state = SLOT_FREE;
    pthread_cond_broadcast(&ra->cv_state);
    pthread_mutex_unlock(&ra->mu);
    return 0;
}
