/* An epoch's read-ahead requests built ahead of its steps, and the step loop of a rank's
 * training epoch, run without the GIL (dlio_mpi/run/steploop.py says when).
 *
 * With sync_first the loop begins with the node barrier that starts the epoch (t_start: when
 * it released the rank; t_end: when the last step ended, before the thread's own policy and
 * Python's epoch's end, which may wait for the cores, come back): under SCHED_FIFO each rank's thread then runs at once, where from
 * Python, under its own policy, it waited for the cores behind the read threads of the ranks
 * released before it (resnet50 at 60 ranks on 2 cores: the last rank left the barrier 50-67
 * ms after the first, and every rank waited for it at the first step's barrier).
 *
 * A step does what dlio_mpi.run.training_loop.run_epochs does: wait for the step's batch and release
 * it (the epoch's first `ahead` batches queued first, unless Python queued them); queue the
 * next batches (up to `ahead` queued); sleep until the step's compute time has
 * passed since the batch arrived (an absolute deadline; when the host's own work outlasted it,
 * the compute counted is the step's time, else until the end of the sleep, oversleep
 * included); then the gradient exchange, the node barrier. It records the wait, compute and
 * exchange time of each step. The loop returns to Python at the epoch's end and wherever
 * Python must act: a step whose files are not open yet, an exchange other than the node
 * barrier, a failed or short read, and at least every check_ns, so that signal handlers run
 * and rank 0 shows progress; state kept in dm_steps, it resumes where it stopped.
 *
 * Inside the loop the rank's thread may run under SCHED_FIFO (io.rank_priority): it only
 * blocks there (a batch, the compute's sleep, the node barrier), and, woken, it takes a core
 * from the read threads at once, as an accelerator ends its step on time whatever the host's
 * cores do. Under the fair policy, on a node with more threads than cores, a woken rank
 * waited for read threads' slices and overslept its compute, and every rank waited for the
 * latest at the barrier. The policy is kept across the returns for signal
 * handlers and progress (a switch back to the fair policy places the thread behind the read
 * threads' slices) and given back at the epoch's end and before any exchange Python runs (an
 * MPI call may spin). Python asks for it only in epochs whose steps open no files
 * (dlio_mpi.run.steploop.rank_priority).
 *
 * Under it, the read threads catch up (dm_ra_boost, readahead_setup.c) at
 * DM_STEPS_BOOST_NICE while the batch the rank's step waits for or takes next is not read yet.
 * Not under the thread's own policy: the boosted threads then took the cores from the ranks'
 * threads. docs/design.md ("Measurements behind the read path") has the figures. */
#define _GNU_SOURCE
#include "steploop.h"

#include <errno.h>
#include <time.h>

int64_t dm_epoch_submit(dm_readahead *ra, dm_epoch *ep, int64_t step, dm_err *e) {
    int64_t g0 = ep->step_seg[step], g1 = ep->step_seg[step + 1];
    int64_t r0 = ep->seg_range[g0], nr = ep->seg_range[g1] - r0, want = 0;
    for (int64_t r = 0; r < nr; r++) {
        int64_t at = ep->range_at[r0 + r];
        ep->off[r] = ep->offs[at];
        ep->len[r] = ep->lens[at];
        want += ep->wants ? ep->wants[at] : ep->len[r];
    }
    for (int64_t g = g0; g < g1; g++) {
        dm_ra_seg *d = &ep->segs[g - g0];
        int64_t slot = ep->seg_slot[g];
        if (!ep->ops[slot]) {
            dm_err_set(e, DM_EARG, "step %lld: file slot %lld is not open",
                       (long long)step, (long long)slot);
            return -1;
        }
        d->ops = ep->ops[slot];
        d->handle = ep->hp[slot];
        d->n = (size_t)(ep->seg_range[g + 1] - ep->seg_range[g]);
        d->xfer = ep->xfer;
        d->busy_ns = ep->seg_busy ? ep->seg_busy[g] : 0;
        d->ordered = ep->ordered;
        d->key = 0;
        d->open = NULL;
    }
    ep->want[step] = want;
    return dm_ra_submit(ra, (size_t)(g1 - g0), ep->segs, ep->off, ep->len, e);
}

/* Submit steps until nsub reaches upto (or the epoch's end). */
static int refill(dm_steps *s, int64_t upto, dm_err *e) {
    dm_epoch *ep = s->ep;
    while (s->nsub < ep->nsteps && s->nsub < upto) {
        if (s->prepare[s->nsub]) return DM_STEPS_PREPARE;
        int64_t t = dm_epoch_submit(s->ra, ep, s->nsub, e);
        if (t < 0) return DM_STEPS_ERROR;
        if (s->ticket0 < 0) s->ticket0 = t - s->nsub;
        if (t != s->ticket0 + s->nsub) {
            dm_err_set(e, DM_EARG, "step %lld got read-ahead ticket %lld, not %lld",
                       (long long)s->nsub, (long long)t, (long long)(s->ticket0 + s->nsub));
            return DM_STEPS_ERROR;
        }
        s->nsub++;
    }
    return DM_STEPS_DONE;
}

/* Sleep until end (CLOCK_MONOTONIC): DM_STEPS_DONE once there, DM_STEPS_CHECK to return
 * first (check_ns since the call, or a signal). */
static int sleep_until(dm_steps *s, int64_t end) {
    int64_t now = dm_mono_ns();
    while (now < end) {
        int64_t until = end, limit = s->t_call + s->check_ns;
        if (until > limit) until = limit;
        if (until > now) {
            struct timespec ts = {until / 1000000000ll, until % 1000000000ll};
            if (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
                return DM_STEPS_CHECK;
        }
        now = dm_mono_ns();
        if (now < end) return DM_STEPS_CHECK;
    }
    return DM_STEPS_DONE;
}

/* The step's compute: DM_STEPS_DONE when it is over, DM_STEPS_CHECK to return first. */
static int compute(dm_steps *s) {
    int64_t ns = s->sleep_ns[s->step];
    if (ns <= 0) {
        s->compute_s[s->step] = 0.0;
        return DM_STEPS_DONE;
    }
    int64_t end = s->t_batch + ns;
    if (!s->slept && dm_mono_ns() >= end) {    /* the host's work outlasted the compute */
        s->compute_s[s->step] = ns * 1e-9;
        return DM_STEPS_DONE;
    }
    s->slept = 1;
    int rc = sleep_until(s, end);
    if (rc != DM_STEPS_DONE) return rc;
    s->compute_s[s->step] = (dm_mono_ns() - s->t_batch) * 1e-9;
    return DM_STEPS_DONE;
}

/* The node barrier: DM_STEPS_DONE when every rank arrived, DM_STEPS_CHECK to return first;
 * its time recorded as the step's exchange (record). */
static int exchange(dm_steps *s, int record) {
    if (!s->arrived) {
        int last = 0;
        s->t_ex0 = dm_mono_ns();
        s->round = dm_nbar_arrive(s->bar, s->nbar, &last);
        s->arrived = last ? 2 : 1;
        s->spun = 0;
    }
    if (s->arrived == 1) {
        int rc = dm_nbar_wait(s->bar, s->round, s->spun ? 0 : s->spin_ns, s->check_ns);
        s->spun = 1;
        if (rc != 0) return DM_STEPS_CHECK;
    }
    s->arrived = 0;
    if (record) s->exchange_s[s->step] = (dm_mono_ns() - s->t_ex0) * 1e-9;
    return DM_STEPS_DONE;
}

static int steps(dm_steps *s, dm_err *e) {
    dm_epoch *ep = s->ep;
    int rc;
    s->t_call = dm_mono_ns();
    for (;;) {
        switch (s->phase) {
        case DM_PH_START:   /* the barrier that starts the epoch, if the loop waits it */
            if (s->sync_first && s->bar && (rc = exchange(s, 0)) != DM_STEPS_DONE) return rc;
            s->t_start = s->t_end = dm_mono_ns();
            s->phase = DM_PH_FILL;
            break;
        case DM_PH_FILL:    /* the epoch's first batches, where Python queued none */
            if (s->step >= ep->nsteps) return DM_STEPS_DONE;
            if (!s->filling) {      /* the step's wait counts from here (its files' opens) */
                s->t_wait0 = dm_mono_ns();
                s->filling = 1;
            }
            if ((rc = refill(s, s->step + s->ahead, e)) != DM_STEPS_DONE) return rc;
            s->filling = 0;
            s->phase = DM_PH_WAIT;
            break;
        case DM_PH_WAIT: {
            int64_t t0 = s->t_wait0, need = 0, total = 0, ticket = s->ticket0 + s->step;
            char *buf = NULL;
            if (dm_ra_wait(s->ra, ticket, &buf, &need, &total, e) != 0) return DM_STEPS_ERROR;
            s->got = total;
            if (total < ep->want[s->step]) return DM_STEPS_SHORT;
            if (dm_ra_release(s->ra, ticket, e) != 0) return DM_STEPS_ERROR;
            s->t_batch = dm_mono_ns();
            s->wait_s[s->step] = (s->t_batch - t0) * 1e-9;
            s->phase = DM_PH_DEFER;
            break;
        }
        case DM_PH_DEFER: {     /* the queueing deferred into the compute */
            int64_t ns = s->sleep_ns[s->step] / 2;
            if (ns > s->defer_ns) ns = s->defer_ns;
            if (ns > 0 && (rc = sleep_until(s, s->t_batch + ns)) != DM_STEPS_DONE) return rc;
            s->phase = DM_PH_REFILL;
            break;
        }
        case DM_PH_REFILL:
            if ((rc = refill(s, s->step + 1 + s->ahead, e)) != DM_STEPS_DONE) return rc;
            s->phase = DM_PH_SLEEP;
            s->slept = 0;
            break;
        case DM_PH_SLEEP:
            if ((rc = compute(s)) != DM_STEPS_DONE) return rc;
            s->phase = DM_PH_EXCHANGE;
            break;
        case DM_PH_EXCHANGE:
            if (!s->bar) {
                s->phase = DM_PH_NEXT;
                return DM_STEPS_EXCHANGE;
            }
            if ((rc = exchange(s, 1)) != DM_STEPS_DONE) return rc;
            s->phase = DM_PH_NEXT;
            break;
        default:    /* DM_PH_NEXT */
            s->step++;
            s->phase = DM_PH_FILL;
            s->t_end = dm_mono_ns();
            if (s->step >= ep->nsteps) return DM_STEPS_DONE;
            if (dm_mono_ns() - s->t_call >= s->check_ns) return DM_STEPS_CHECK;
        }
    }
}

void dm_steps_leave(dm_steps *s) {
    if (s->rt_on) {
        dm_ra_boost(s->ra, 0);
        dm_thread_sched_restore(&s->rt_was);
    }
    s->rt_on = 0;
}

int dm_steps_run(dm_steps *s, dm_err *e) {
    if (s->rt_priority > 0 && !s->rt_on) {
        if (dm_thread_fifo(s->rt_priority, &s->rt_was) == 0) {
            s->rt_on = 1;
            dm_ra_boost(s->ra, DM_STEPS_BOOST_NICE);    /* refused: run_facts said why */
        } else {
            s->rt_priority = 0;     /* refused: run_facts' probe said why */
        }
    }
    int rc = steps(s, e);
    if (rc != DM_STEPS_PREPARE && rc != DM_STEPS_CHECK) dm_steps_leave(s);
    return rc;
}
