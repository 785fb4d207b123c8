/* A barrier of the processes of one node in shared memory, waited on with futexes: a process
 * that arrives early sleeps in the kernel and takes no CPU, and the last one to arrive wakes
 * them all at once. It is the gradient exchange's barrier between the ranks of a node
 * (dlio_mpi.run.training_loop.Exchange): an MPI barrier spins on its core or, tested between sleeps,
 * completes one polling interval per round after the last arrival.
 *
 * The barrier is two 32-bit words in memory every process maps (an MPI shared-memory window),
 * zeroed before first use: count, the processes arrived in this round, and gen, the round.
 * A process reads gen, then adds itself to count; the one that makes count n resets it and
 * increments gen (in that order, so that no process leaves before count is reset), then wakes
 * the waiters, which wait while gen is the round they read. */
#define _GNU_SOURCE
#include "dm.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

uint32_t dm_nbar_arrive(dm_nbar *b, uint32_t n, int *last) {
    uint32_t round = __atomic_load_n(&b->gen, __ATOMIC_ACQUIRE);
    if (__atomic_add_fetch(&b->count, 1, __ATOMIC_ACQ_REL) == n) {
        __atomic_store_n(&b->count, 0, __ATOMIC_RELAXED);
        __atomic_add_fetch(&b->gen, 1, __ATOMIC_RELEASE);
        syscall(SYS_futex, &b->gen, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
        *last = 1;
    } else {
        *last = 0;
    }
    return round;
}

int dm_nbar_wait(dm_nbar *b, uint32_t round, int64_t spin_ns, int64_t timeout_ns) {
    struct timespec ts = {timeout_ns / 1000000000ll, timeout_ns % 1000000000ll};
    /* ranks that arrive together (steps without compute) leave without sleeping: a wake-up
     * from the futex costs tens of microseconds, spin_ns of spinning at most this much */
    for (int64_t end = dm_mono_ns() + spin_ns;
         __atomic_load_n(&b->gen, __ATOMIC_ACQUIRE) == round;) {
        if (dm_mono_ns() >= end) break;
        cpu_relax();
    }
    while (__atomic_load_n(&b->gen, __ATOMIC_ACQUIRE) == round) {
        /* not FUTEX_PRIVATE: the word is shared between processes */
        if (syscall(SYS_futex, &b->gen, FUTEX_WAIT, round, &ts, NULL, 0) != 0 &&
            errno == ETIMEDOUT)
            return __atomic_load_n(&b->gen, __ATOMIC_ACQUIRE) == round ? 1 : 0;
    }
    return 0;
}
