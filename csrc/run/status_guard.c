/* The run's status when rank 0 is stopped inside a library call.
 *
 * The launcher ends a job with SIGTERM (then SIGKILL). Python runs its own handler only when the
 * main thread is back in the interpreter, which a rank inside a collective MPI call, or a long
 * read or write, may never be before SIGKILL. Armed by the rank that owns the run's output
 * folder, this handler writes the status file itself (a prepared body through a temporary name
 * and rename: async-signal-safe calls only), unless a failing rank has left its note, then hands
 * the signal on to the handler installed before it (Python's). A rank on rank 0's host arms it
 * with rank 0's pid: it writes only when rank 0 is gone (killed, so the launcher ends the job
 * and nothing else would say so). Rank 0's guard also knows the pids of the other ranks on its
 * host: when one of them is gone as the signal arrives, that rank died and the launcher is
 * ending the job, and the status written names it instead of the prepared reason.
 *
 * Rank 0 also gives back the checkpoint folder's lock here: the next job may run on other
 * hosts, which cannot tell that the process named in a lock left behind is gone, and would be
 * refused. The lock is removed only while it still holds this run's record, byte for byte.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dm.h"

#define GUARD_PATH 4096
#define GUARD_BODY 2048

static char g_tmp[GUARD_PATH], g_final[GUARD_PATH], g_skip[GUARD_PATH], g_body[GUARD_BODY];
static size_t g_len;
static long g_watch;
static volatile sig_atomic_t g_armed;
static struct sigaction g_prev[2];
static const int g_sigs[2] = {SIGTERM, SIGINT};
/* the other ranks on this host: their ranks and pids (set before arming, read in the handler) */
static int *g_peer_rank;
static long *g_peer_pid;
static volatile sig_atomic_t g_npeers;
/* a lock file to remove on the signal, and the record it holds while it is this run's */
#define GUARD_LOCK 1024
static char g_lock[GUARD_PATH], g_lock_rec[GUARD_LOCK];
static size_t g_lock_len;
static volatile sig_atomic_t g_lock_set;

/* Appends text, or a non-negative number, to out (async-signal-safe: no stdio). */
static size_t put_text(char *out, size_t at, size_t cap, const char *text)
{
    while (*text && at + 1 < cap)
        out[at++] = *text++;
    out[at] = '\0';
    return at;
}

static size_t put_number(char *out, size_t at, size_t cap, long v)
{
    char digits[24];
    int n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v > 0 && n < (int)sizeof digits);
    while (n > 0 && at + 1 < cap)
        out[at++] = digits[--n];
    out[at] = '\0';
    return at;
}

/* The index of a peer whose process is gone, or -1. */
static int dead_peer(void)
{
    for (int i = 0; i < g_npeers; i++)
        if (kill((pid_t)g_peer_pid[i], 0) != 0 && errno == ESRCH)
            return i;
    return -1;
}

/* The status naming a dead peer into g_body (in the handler, once disarmed). */
static void body_for_dead_peer(int i)
{
    size_t at = put_text(g_body, 0, GUARD_BODY, "{\"status\": \"interrupted\", \"reason\": \"rank ");
    at = put_number(g_body, at, GUARD_BODY, g_peer_rank[i]);
    at = put_text(g_body, at, GUARD_BODY, " (pid ");
    at = put_number(g_body, at, GUARD_BODY, g_peer_pid[i]);
    at = put_text(g_body, at, GUARD_BODY, ") died; the launcher ended the job\", \"pid\": ");
    at = put_number(g_body, at, GUARD_BODY, (long)getpid());
    at = put_text(g_body, at, GUARD_BODY, "}");
    g_len = at;
}

static void pass_on(int sig, siginfo_t *info, void *ctx)
{
    const struct sigaction *prev = &g_prev[sig == SIGTERM ? 0 : 1];
    if (prev->sa_flags & SA_SIGINFO) {
        if (prev->sa_sigaction)
            prev->sa_sigaction(sig, info, ctx);
    } else if (prev->sa_handler == SIG_DFL) {
        signal(sig, SIG_DFL);
        raise(sig);
    } else if (prev->sa_handler != SIG_IGN && prev->sa_handler) {
        prev->sa_handler(sig);
    }
}

/* Removes g_lock if it still holds g_lock_rec (async-signal-safe calls only). */
static void give_back_lock(void)
{
    if (!g_lock_set)
        return;
    g_lock_set = 0;
    int fd = open(g_lock, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return;
    char got[GUARD_LOCK + 1];
    size_t n = 0;
    while (n < sizeof got) {
        ssize_t r = read(fd, got + n, sizeof got - n);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (n == g_lock_len && memcmp(got, g_lock_rec, n) == 0)
        unlink(g_lock);
}

static void on_signal(int sig, siginfo_t *info, void *ctx)
{
    int saved = errno;
    if (g_armed)
        give_back_lock();
    if (g_armed) {
        g_armed = 0;
        int watched_alive = g_watch > 0 && (kill((pid_t)g_watch, 0) == 0 || errno != ESRCH);
        if (!watched_alive && (g_skip[0] == '\0' || access(g_skip, F_OK) != 0)) {
            int dead = dead_peer();
            if (dead >= 0)
                body_for_dead_peer(dead);
            /* the entry at the temporary name (stale, or a planted link) goes first, and
             * the file is created new, never through a link */
            unlink(g_tmp);
            int fd = open(g_tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
            if (fd >= 0) {
                size_t done = 0;
                while (done < g_len) {
                    ssize_t w = write(fd, g_body + done, g_len - done);
                    if (w <= 0)
                        break;
                    done += (size_t)w;
                }
                close(fd);
                if (done == g_len)
                    rename(g_tmp, g_final);
                else
                    unlink(g_tmp);
            }
        }
    }
    errno = saved;
    pass_on(sig, info, ctx);
}

int dm_status_guard_arm(const char *tmp, const char *final, const char *skip_if,
                        const char *body, long watch_pid, dm_err *e)
{
    if (strlen(tmp) >= GUARD_PATH || strlen(final) >= GUARD_PATH ||
        strlen(skip_if) >= GUARD_PATH || strlen(body) >= GUARD_BODY) {
        dm_err_set(e, DM_EARG, "status guard: a path or the status is too long");
        return -1;
    }
    dm_status_guard_disarm();
    strcpy(g_tmp, tmp);
    strcpy(g_final, final);
    strcpy(g_skip, skip_if);
    strcpy(g_body, body);
    g_len = strlen(body);
    g_watch = watch_pid;
    for (int i = 0; i < 2; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_signal;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        if (sigaction(g_sigs[i], &sa, &g_prev[i]) != 0) {
            dm_err_set(e, errno, "status guard: sigaction: %s", strerror(errno));
            return -1;
        }
    }
    g_armed = 1;
    return 0;
}

int dm_status_guard_peers(int n, const int *ranks, const long *pids, dm_err *e)
{
    int *r = n > 0 ? malloc((size_t)n * sizeof *r) : NULL;
    long *p = n > 0 ? malloc((size_t)n * sizeof *p) : NULL;
    if (n > 0 && (!r || !p)) {
        free(r);
        free(p);
        dm_err_set(e, DM_ENOMEM, "status guard: out of memory for %d ranks", n);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        r[i] = ranks[i];
        p[i] = pids[i];
    }
    /* the handler sees either no peers or the whole new list */
    g_npeers = 0;
    free(g_peer_rank);
    free(g_peer_pid);
    g_peer_rank = r;
    g_peer_pid = p;
    g_npeers = n;
    return 0;
}

int dm_status_guard_lock(const char *path, const char *record, dm_err *e)
{
    g_lock_set = 0;
    if (!path[0])
        return 0;
    if (strlen(path) >= GUARD_PATH || strlen(record) >= GUARD_LOCK) {
        dm_err_set(e, DM_EARG, "status guard: the lock's path or record is too long");
        return -1;
    }
    strcpy(g_lock, path);
    strcpy(g_lock_rec, record);
    g_lock_len = strlen(record);
    g_lock_set = 1;
    return 0;
}

void dm_status_guard_disarm(void)
{
    if (!g_armed && g_len == 0)
        return;
    g_armed = 0;
    for (int i = 0; i < 2; i++) {
        struct sigaction cur;
        /* put the previous handler back only if ours is still the one installed */
        if (sigaction(g_sigs[i], NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
            cur.sa_sigaction == on_signal)
            sigaction(g_sigs[i], &g_prev[i], NULL);
    }
    g_len = 0;
}
