/* The per-rank op log: preallocated struct-of-arrays storage written on the hot path with one
 * tick read per operation boundary, converted to nanoseconds in place when finalized. */
#define _GNU_SOURCE
#include "dm.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- tick calibration: ns per tick, measured once per process over ~5 ms */
static double g_ns_per_tick = 0.0;
static pthread_once_t g_calib_once = PTHREAD_ONCE_INIT;

static void calibrate(void) {
#if DM_TICKS_ARE_NS
    g_ns_per_tick = 1.0;
#else
    int64_t n0 = dm_mono_ns();
    uint64_t t0 = dm_ticks();
    struct timespec req = {0, 5000000};
    while (nanosleep(&req, &req) != 0 && errno == EINTR) {}
    int64_t n1 = dm_mono_ns();
    uint64_t t1 = dm_ticks();
    g_ns_per_tick = (t1 > t0) ? (double)(n1 - n0) / (double)(t1 - t0) : 1.0;
#endif
}

dm_oplog *dm_oplog_create(size_t cap, dm_err *e) {
    pthread_once(&g_calib_once, calibrate);
    dm_oplog *L = calloc(1, sizeof *L);
    if (!L) goto nomem;
    L->cap = cap;
    size_t c = cap ? cap : 1;
    L->start = malloc(c * sizeof(int64_t));
    L->dur = malloc(c * sizeof(int64_t));
    L->offset = malloc(c * sizeof(int64_t));
    L->bytes = malloc(c * sizeof(int64_t));
    L->file = malloc(c * sizeof(int32_t));
    L->op = malloc(c);
    L->iface = malloc(c);
    L->over_lock = malloc(sizeof(pthread_mutex_t));
    if (!L->start || !L->dur || !L->offset || !L->bytes || !L->file || !L->op || !L->iface ||
        !L->over_lock) {
        dm_oplog_free(L);
        goto nomem;
    }
    pthread_mutex_init((pthread_mutex_t *)L->over_lock, NULL);
    L->enabled = 1;
    L->ns_per_tick = g_ns_per_tick;
    L->mono0_ns = dm_mono_ns();
    L->tick0 = dm_ticks();
    return L;
nomem:
    dm_err_set(e, DM_ENOMEM, "cannot allocate an op log of %zu entries", cap);
    return NULL;
}

void dm_oplog_free(dm_oplog *L) {
    if (!L) return;
    free(L->start); free(L->dur); free(L->offset); free(L->bytes);
    free(L->file); free(L->op); free(L->iface);
    if (L->over_lock) {
        pthread_mutex_destroy((pthread_mutex_t *)L->over_lock);
        free(L->over_lock);
    }
    free(L);
}

void dm_oplog_reset(dm_oplog *L) {
    L->n = 0;
    L->nconv = 0;
    memset(L->over_count, 0, sizeof L->over_count);
    memset(L->over_bytes, 0, sizeof L->over_bytes);
    memset(L->over_hist, 0, sizeof L->over_hist);
}

/* Refine ns-per-tick from the whole life of the log (a longer baseline than calibration). */
static double refined_ratio(dm_oplog *L) {
#if DM_TICKS_ARE_NS
    (void)L;
    return 1.0;
#else
    int64_t dn = dm_mono_ns() - L->mono0_ns;
    uint64_t dt = dm_ticks() - L->tick0;
    if (dn > 50000000 && dt > 0) L->ns_per_tick = (double)dn / (double)dt;
    return L->ns_per_tick;
#endif
}

void dm_oplog_finalize(dm_oplog *L) {
    size_t n = L->n < L->cap ? L->n : L->cap;
    if (L->nconv >= n) return;
#if !DM_TICKS_ARE_NS
    double r = refined_ratio(L);
    for (size_t i = L->nconv; i < n; i++) {
        L->start[i] = (int64_t)llround((double)L->start[i] * r);
        L->dur[i] = (int64_t)llround((double)L->dur[i] * r);
    }
#endif
    L->nconv = n;
}

uint64_t dm_oplog_overflow(const dm_oplog *L) {
    uint64_t s = 0;
    for (int f = 0; f < DM_IF_N; f++)
        for (int k = 0; k < DM_OP_N; k++) s += L->over_count[f][k];
    return s;
}

int dm_hist_bucket(int64_t ns) {
    if (ns < 1) return 0;
    /* 4 buckets per doubling: floor(4*log2(ns)) from the top 3 bits */
    int lg = 63 - __builtin_clzll((unsigned long long)ns);
    int frac;
    if (lg >= 2) frac = (int)((ns >> (lg - 2)) & 3);
    else frac = (int)((ns << (2 - lg)) & 3);
    /* frac in 0..3 approximates the quarter-octave: 1.00,1.25,1.50,1.75 (linear split) */
    int b = 1 + lg * 4 + frac;
    return b >= DM_HIST_BUCKETS ? DM_HIST_BUCKETS - 1 : b;
}

double dm_hist_bucket_lower_ns(int b) {
    if (b <= 0) return 0.0;
    int lg = (b - 1) / 4, frac = (b - 1) % 4;
    return ldexp(1.0 + frac / 4.0, lg);
}

void dm_oplog_overflow_add(dm_oplog *L, uint64_t t0, uint64_t t1, int64_t bytes, int op,
                           int iface) {
    pthread_mutex_t *m = (pthread_mutex_t *)L->over_lock;
    int64_t ns = (int64_t)((double)(t1 - t0) * L->ns_per_tick);
    if (op < 0 || op >= DM_OP_N) op = DM_OP_READ;
    if (iface < 0 || iface >= DM_IF_N) iface = DM_IF_POSIX;
    pthread_mutex_lock(m);
    L->over_count[iface][op]++;
    L->over_bytes[iface][op] += bytes;
    L->over_hist[iface][op][dm_hist_bucket(ns)]++;
    pthread_mutex_unlock(m);
}

void dm_oplog_histogram(const dm_oplog *L, int op, int iface, uint64_t *hist) {
    size_t n = L->nconv;
    for (size_t i = 0; i < n; i++) {
        if (op >= 0 && L->op[i] != op) continue;
        if (iface >= 0 && L->iface[i] != iface) continue;
        hist[dm_hist_bucket(L->dur[i])]++;
    }
    for (int f = 0; f < DM_IF_N; f++) {
        if (iface >= 0 && f != iface) continue;
        for (int k = 0; k < DM_OP_N; k++) {
            if (op >= 0 && k != op) continue;
            for (int b = 0; b < DM_HIST_BUCKETS; b++) hist[b] += L->over_hist[f][k][b];
        }
    }
}
