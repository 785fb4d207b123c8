"""A dlio_mpi workload fitted to a real job: the measurements, the input library's pattern,
checkpoints."""
