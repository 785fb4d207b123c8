/* Read-ahead's internals, shared by readahead.c (the queue and its threads) and
 * readahead_setup.c (making and ending one, and its threads' nice values). */
#ifndef DM_READAHEAD_IMPL_H
#define DM_READAHEAD_IMPL_H
#include "dm.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { SLOT_FREE = 0, SLOT_QUEUED, SLOT_DONE };

typedef struct {
    dm_ra_seg seg;
    size_t first;           /* its first range in the request's off/len */
    int64_t bufpos;         /* where its ranges start in the slot (keep) */
    int64_t got;            /* bytes read */
} seg_t;

typedef struct {
    int state;
    int64_t ticket;
    size_t n;               /* ranges */
    size_t cap_off, cap_len;    /* capacity of off and of len: each grows on its own, so that
                                 * a failed second realloc leaves the first one's true size */
    int64_t *off, *len;
    size_t nseg, segcap;
    seg_t *segs;
    size_t claimed;         /* segments taken by threads */
    size_t finished;        /* segments done */
    char *buf;
    int64_t need;           /* bytes the request spans in its slot */
    int64_t total;
    int failed;
    dm_err err;
} slot_t;

typedef struct {            /* the segment a thread reads, for ordered handles */
    const void *handle;
    uint64_t seq;
    int active;
} inflight_t;

struct dm_readahead {
    pthread_mutex_t mu;
    uint32_t work_seq;          /* futex word threads wait on for a queued segment */
    int idle;                   /* threads waiting on it */
    pthread_cond_t cv_state;    /* submitters and waiters wait for a slot state change */
    pthread_cond_t cv_order;    /* a thread waits for an earlier segment of its handle */
    pthread_t *threads;
    int nthreads;               /* threads started */
    int nfly;                   /* size of fly */
    int started;                /* threads that took their buffer */
    char **tbuf;                /* without keep: one buffer per thread */
    inflight_t *fly;
    int keep;
    int depth;
    size_t slot_bytes;
    slot_t *slots;
    int64_t next_submit;
    int64_t next_pick;          /* oldest request with unclaimed segments */
    uint64_t seq;               /* segments claimed so far */
    int stop;
    pid_t *tids;                /* the threads' ids, their nice values: */
    int *nice0;
    int boost_nice;             /* dm_ra_boost: the catching-up nice value (0: none) */
    int boosted;                /* the threads run at it now */
};

/* The threads' body (readahead.c). */
void *dm_ra_worker(void *arg);
/* The thread driving the requests, once it knows whether the batch it waits for or takes next
 * is read (readahead_setup.c). */
void dm_ra_catch_up(dm_readahead *ra, int behind);

#endif
