"""One training job from start to results: the job, the training loop and its C step loop, the
gradient exchange, emulated compute, errors and signals across ranks, status, progress, metrics,
the summary and the run's outputs, Darshan."""
