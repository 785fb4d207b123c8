"""The evaluation schedule of a fitted workload, from the evaluation phases a job's trace shows
(:mod:`dlio_mpi_analysis.characterization.evaluation_phases`)."""

# how far from a whole epoch (in epochs) an evaluation may start and still be placed after it
EPOCH_TOLERANCE = 0.25


def schedule(before_share, epochs):
    """(eval_after_epoch, epochs_between_evals, exact) placing evaluations after the epochs
    ``before_share`` times ``epochs`` says (each rounded); exact is False when no such
    schedule gives those phases in ``epochs`` epochs, or a phase lies more than
    EPOCH_TOLERANCE from a whole epoch."""
    before_epochs = [b * epochs for b in before_share]
    after = [max(1, int(round(b))) for b in before_epochs]
    close = all(abs(b - a) <= EPOCH_TOLERANCE for b, a in zip(before_epochs, after))
    first = after[0]
    # one evaluation: a period that brings no second one within the run
    between = max(1, after[1] - first) if len(after) > 1 else max(1, epochs - first + 1)
    placed = [e for e in range(1, epochs + 1) if e >= first and (e - first) % between == 0]
    return first, between, close and placed == after
