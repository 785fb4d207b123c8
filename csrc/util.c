/* Helpers every engine uses: error records, aligned buffers, the monotonic clock. */
#define _GNU_SOURCE
#include "dm.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void dm_err_set(dm_err *e, int code, const char *fmt, ...) {
    if (!e) return;
    va_list ap;
    e->code = code;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
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
