/* Read-ahead: making and ending one, and its threads' nice values.
 *
 * Catching up (dm_ra_boost): on a node with more read threads than cores, the kernel shares
 * the cores among all ranks' threads alike, whichever batch they read; a rank whose next batch
 * fell behind got its share only, while the others' threads read batches due steps later, and
 * with a barrier per step every rank then waited for it, while no thread of theirs had yet
 * been given a core for a batch queued long before. With a
 * boost set, a rank's threads run at that nice value while the batch its step waits for, or
 * the one its next step takes, is not read yet, and at their own value again once it is. The
 * thread that waits for and releases the requests drives it (one thread). */
#define _GNU_SOURCE
#include "readahead_impl.h"

static char *touched(size_t align, size_t bytes) {
    char *b = dm_aligned_alloc(align, bytes);
    if (b) memset(b, 0, bytes);
    return b;
}

static void free_parts(dm_readahead *ra) {
    for (int i = 0; ra->slots && i < ra->depth; i++) {
        dm_aligned_free(ra->slots[i].buf);
        free(ra->slots[i].off);
        free(ra->slots[i].len);
        free(ra->slots[i].segs);
    }
    for (int i = 0; ra->tbuf && i < ra->nfly; i++) dm_aligned_free(ra->tbuf[i]);
    free(ra->tbuf);
    free(ra->fly);
    free(ra->tids);
    free(ra->nice0);
    free(ra->slots);
    free(ra->threads);
    free(ra);
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
    ra->depth = depth;
    ra->nfly = nthreads;
    ra->slot_bytes = slot_bytes;
    ra->keep = keep;
    ra->slots = calloc((size_t)depth, sizeof(slot_t));
    ra->threads = calloc((size_t)nthreads, sizeof(pthread_t));
    ra->tbuf = calloc((size_t)nthreads, sizeof(char *));
    ra->fly = calloc((size_t)nthreads, sizeof(inflight_t));
    ra->tids = calloc((size_t)nthreads, sizeof(pid_t));
    ra->nice0 = calloc((size_t)nthreads, sizeof(int));
    if (!ra->slots || !ra->threads || !ra->tbuf || !ra->fly || !ra->tids || !ra->nice0)
        goto nomem_free;
    size_t bytes = (slot_bytes + align - 1) / align * align;
    for (int i = 0; i < depth; i++) {
        ra->slots[i].ticket = -1;
        if (keep && !(ra->slots[i].buf = touched(align, bytes))) goto nomem_free;
    }
    for (int i = 0; i < nthreads && !keep; i++)
        if (!(ra->tbuf[i] = touched(align, bytes))) goto nomem_free;
    pthread_mutex_init(&ra->mu, NULL);
    pthread_cond_init(&ra->cv_state, NULL);
    pthread_cond_init(&ra->cv_order, NULL);
    for (int i = 0; i < nthreads; i++) {
        if (pthread_create(&ra->threads[i], NULL, dm_ra_worker, ra) != 0) {
            dm_err_set(e, DM_ENOMEM, "cannot start read-ahead thread %d", i);
            dm_ra_free(ra);
            return NULL;
        }
        ra->nthreads = i + 1;
    }
    /* every thread has its scheduling attributes and buffer before the first request */
    pthread_mutex_lock(&ra->mu);
    while (ra->started < nthreads) pthread_cond_wait(&ra->cv_state, &ra->mu);
    pthread_mutex_unlock(&ra->mu);
    return ra;
nomem_free:
    free_parts(ra);
nomem:
    dm_err_set(e, DM_ENOMEM, "cannot allocate read-ahead buffers of %d x %zu bytes",
               keep ? depth : nthreads, slot_bytes);
    return NULL;
}

void dm_ra_free(dm_readahead *ra) {
    if (!ra) return;
    pthread_mutex_lock(&ra->mu);
    ra->stop = 1;
    __atomic_add_fetch(&ra->work_seq, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&ra->mu);
    syscall(SYS_futex, &ra->work_seq, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
    for (int i = 0; i < ra->nthreads; i++) pthread_join(ra->threads[i], NULL);
    pthread_mutex_destroy(&ra->mu);
    pthread_cond_destroy(&ra->cv_state);
    pthread_cond_destroy(&ra->cv_order);
    free_parts(ra);
}

size_t dm_ra_slot_bytes(const dm_readahead *ra) { return ra->slot_bytes; }

const char *dm_ra_thread_buffer(const dm_readahead *ra, int i) {
    return ra->keep || i < 0 || i >= ra->nthreads ? NULL : ra->tbuf[i];
}

/* Every thread to its own nice value (boost 0) or to the boost's; 0 or -errno. */
static int renice(dm_readahead *ra, int boost) {
    for (int i = 0; i < ra->nfly; i++)
        if (setpriority(PRIO_PROCESS, (id_t)ra->tids[i], boost ? ra->boost_nice : ra->nice0[i]))
            return -errno;
    return 0;
}

void dm_ra_catch_up(dm_readahead *ra, int behind) {
    if (!ra->boost_nice || behind == ra->boosted) return;
    ra->boosted = behind;
    if (renice(ra, behind) != 0) {      /* refused (dm_ra_boost probed it): off */
        ra->boost_nice = 0;
        if (!behind) return;
        ra->boosted = 0;
        renice(ra, 0);
    }
}

int dm_ra_boost(dm_readahead *ra, int nice) {
    if (nice == ra->boost_nice) return 0;
    if (ra->boosted) {
        ra->boosted = 0;
        renice(ra, 0);
    }
    ra->boost_nice = nice;
    if (!nice) return 0;
    /* probed on the first thread: the kernel's answer is the same for all of them */
    int rc = setpriority(PRIO_PROCESS, (id_t)ra->tids[0], nice) ? -errno : 0;
    setpriority(PRIO_PROCESS, (id_t)ra->tids[0], ra->nice0[0]);
    if (rc) ra->boost_nice = 0;
    return rc;
}
