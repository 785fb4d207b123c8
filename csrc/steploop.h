/* steploop.c: an epoch's read-ahead requests built ahead of its steps, and the training step
 * loop that runs them without the GIL (dlio_mpi.run.steploop). */
#ifndef DLIO_MPI_STEPLOOP_H
#define DLIO_MPI_STEPLOOP_H

#include "dm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An epoch's requests: step s is segments [step_seg[s], step_seg[s + 1]); segment g reads
 * ranges [seg_range[g], seg_range[g + 1]) of the file in slot seg_slot[g] of the handle table
 * (ops[slot], hp[slot]), then spends seg_busy[g] ns preprocessing (seg_busy may be NULL);
 * range r is offs[range_at[r]], lens[range_at[r]], of which wants[range_at[r]] bytes are
 * expected (wants NULL: all; a stream's reads at a file's end expect none). With ordered, a
 * file's segments are read one after another in step order. The arrays belong to the
 * caller. */
typedef struct {
    int64_t nsteps;
    const int64_t *step_seg, *seg_slot, *seg_range, *seg_busy, *range_at, *offs, *lens;
    const int64_t *wants;
    int ordered;
    const dm_engine_ops **ops;
    void **hp;
    int64_t xfer;
    int64_t *want;          /* per step: bytes its ranges ask for, set when it is submitted */
    dm_ra_seg *segs;        /* scratch of the widest step: its segments and ranges */
    int64_t *off, *len;
} dm_epoch;

/* Submit step `step` of ep to ra; its ticket, or -1 (e set). */
int64_t dm_epoch_submit(dm_readahead *ra, dm_epoch *ep, int64_t step, dm_err *e);

/* The step loop's state between calls of dm_steps_run. */
enum { DM_PH_START = 0, DM_PH_FILL, DM_PH_WAIT, DM_PH_DEFER, DM_PH_REFILL, DM_PH_SLEEP,
       DM_PH_EXCHANGE, DM_PH_NEXT };
/* What dm_steps_run returned for. */
enum {
    DM_STEPS_DONE = 0,      /* the epoch's last step is done */
    DM_STEPS_CHECK,         /* check_ns passed (or a signal came): Python runs its handlers */
    DM_STEPS_PREPARE,       /* step nsub needs Python before its submit (files to open) */
    DM_STEPS_EXCHANGE,      /* Python runs this step's exchange, then resumes */
    DM_STEPS_SHORT,         /* the batch of step `step` has fewer bytes than wanted */
    DM_STEPS_ERROR,         /* a read or submit failed (e set) */
};

/* The nice value of a rank's read threads while its next batch is behind (steploop.c). */
#define DM_STEPS_BOOST_NICE (-20)

typedef struct {
    dm_readahead *ra;
    dm_epoch *ep;
    int64_t ticket0;        /* the ticket of step 0 (steps are submitted in order) */
    int64_t ahead;          /* requests queued at most */
    int64_t nsub;           /* the next step to submit */
    int64_t step;           /* the step running */
    int phase;
    uint8_t *prepare;       /* per step: Python prepares it before its submit */
    const int64_t *sleep_ns;    /* per step: emulated compute */
    int64_t defer_ns;       /* queue the next batches this far into the compute (at most half) */
    dm_nbar *bar;           /* the node barrier, or NULL: Python runs the exchange */
    uint32_t nbar;
    int64_t spin_ns, check_ns;
    int sync_first;         /* begin with the node barrier that starts the epoch */
    int64_t t_start;        /* when the epoch started for this rank (CLOCK_MONOTONIC ns), */
    int64_t t_end;          /* when its last step (so far) ended */
    int rt_priority;        /* SCHED_FIFO priority of the thread inside the loop, 0: none */
    int rt_on;              /* the thread runs under it now; its attributes before: */
    dm_sched_attr rt_was;
    double *wait_s, *compute_s, *exchange_s;    /* per step, what it measured */
    /* within a step */
    int64_t t_batch, t_ex0, t_call, t_wait0;
    int filling;
    int64_t got;
    int arrived, spun, slept;
    uint32_t round;
} dm_steps;

/* Run steps from s->step and s->phase until the epoch ends or Python must act; with
 * rt_priority, under SCHED_FIFO (refused: rt_priority set to 0, the steps go on without it),
 * which it keeps for Python's short errands within the steps (DM_STEPS_PREPARE,
 * DM_STEPS_CHECK) and gives back on any other return. */
int dm_steps_run(dm_steps *s, dm_err *e);
/* Give the thread back its attributes if the loop left it under SCHED_FIFO (call when the
 * loop is left early, on an error raised between calls). */
void dm_steps_leave(dm_steps *s);

#ifdef __cplusplus
}
#endif
#endif
