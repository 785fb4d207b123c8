"""Reading logs: one Darshan log or the per-process logs of one job (darshan-util's C library, the region map
checked first, what darshan-util's C code says captured), the roles of a job's processes,
descriptors reused out of Darshan's sight, and a dlio_mpi run's own op logs read as a Darshan
job."""
