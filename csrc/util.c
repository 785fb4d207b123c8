/* Helpers every engine uses: error records, aligned buffers, the monotonic clock, a thread's
 * time slice. */
#define _GNU_SOURCE
#include "dm.h"

#include <errno.h>
#include <linux/futex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

void dm_err_set(dm_err *e, int code, const char *fmt, ...) {
    if (!e) return;
    va_list ap;
    e->code = code;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
}

int dm_refused_write(dm_err *e, int err, const char *path, int flags) {
    if (!(flags & DM_O_WRITE)) return 0;
    if (err == EEXIST && (flags & DM_O_EXCL))
        dm_err_set(e, err, "cannot create %s: an entry already holds its name (left by a stopped "
                   "run, or planted); not overwritten", path);
    else if (err == ELOOP)
        dm_err_set(e, err, "cannot open %s for writing: it is a symbolic link, which is not "
                   "followed", path);
    else
        return 0;
    return 1;
}

void dm_err_clear(dm_err *e) {
    if (e) { e->code = 0; e->msg[0] = 0; }
}

void *dm_aligned_alloc(size_t align, size_t bytes) {
    void *p = NULL;
    if (align < sizeof(void *)) align = sizeof(void *);
    if (bytes == 0) bytes = align;
    if (posix_memalign(&p, align, bytes) != 0) return NULL;
    return p;
}

void dm_aligned_free(void *p) { free(p); }

int64_t dm_mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

int64_t dm_thread_slice(uint64_t ns) {
#if defined(SYS_sched_getattr) && defined(SYS_sched_setattr)
    dm_sched_attr a;
    memset(&a, 0, sizeof a);
    if (syscall(SYS_sched_getattr, 0, &a, (unsigned)sizeof a, 0) != 0) return -errno;
    if (a.policy != 0 && a.policy != 3) return 0;     /* SCHED_OTHER, SCHED_BATCH only */
    a.size = sizeof a;
    a.flags = 0;
    a.runtime = ns;
    if (syscall(SYS_sched_setattr, 0, &a, 0) != 0) return -errno;
    memset(&a, 0, sizeof a);
    if (syscall(SYS_sched_getattr, 0, &a, (unsigned)sizeof a, 0) != 0) return -errno;
    return (int64_t)a.runtime;
#else
    (void)ns;
    return -ENOSYS;
#endif
}

int dm_thread_fifo(int priority, dm_sched_attr *was) {
#if defined(SYS_sched_getattr) && defined(SYS_sched_setattr)
    memset(was, 0, sizeof *was);
    if (syscall(SYS_sched_getattr, 0, was, (unsigned)sizeof *was, 0) != 0) return -errno;
    was->size = sizeof *was;
    dm_sched_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.policy = 1;           /* SCHED_FIFO */
    a.priority = (uint32_t)priority;
    if (syscall(SYS_sched_setattr, 0, &a, 0) != 0) return -errno;
    return 0;
#else
    (void)priority; (void)was;
    return -ENOSYS;
#endif
}

int dm_thread_nice_probe(int nice) {
    id_t tid = (id_t)syscall(SYS_gettid);
    errno = 0;
    int was = getpriority(PRIO_PROCESS, tid);
    if (errno) was = 0;
    if (setpriority(PRIO_PROCESS, tid, nice) != 0) return -errno;
    setpriority(PRIO_PROCESS, tid, was);
    return 0;
}

int dm_thread_sched_restore(const dm_sched_attr *was) {
#if defined(SYS_sched_setattr)
    dm_sched_attr a = *was;
    a.flags = 0;
    if (syscall(SYS_sched_setattr, 0, &a, 0) != 0) return -errno;
    return 0;
#else
    (void)was;
    return -ENOSYS;
#endif
}

void dm_inflight_add(dm_inflight *c) { __atomic_add_fetch(&c->n, 1, __ATOMIC_ACQ_REL); }

void dm_inflight_done(dm_inflight *c) {
    if (__atomic_sub_fetch(&c->n, 1, __ATOMIC_ACQ_REL) == 0)
        syscall(SYS_futex, &c->n, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

void dm_inflight_wait(dm_inflight *c) {
    uint32_t n;
    while ((n = __atomic_load_n(&c->n, __ATOMIC_ACQUIRE)) != 0)
        syscall(SYS_futex, &c->n, FUTEX_WAIT_PRIVATE, n, NULL, NULL, 0);
}

uint32_t dm_inflight_count(const dm_inflight *c) {
    return __atomic_load_n(&c->n, __ATOMIC_ACQUIRE);
}

int dm_inflight_check_close(const dm_inflight *c, const char *path, dm_err *e) {
    uint32_t n = dm_inflight_count(c);
    if (n == 0) return 0;
    dm_err_set(e, DM_EARG, "close of %s refused: %u read-ahead segment%s of it not done", path,
               n, n == 1 ? "" : "s");
    return -1;
}
