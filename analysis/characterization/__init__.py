"""A job's I/O characterization: which counters hold what, the layer a job is counted at, the role
of every file, the data I/O alone, DXT and module metrics, read and write order, the job
summary, and the text and JSON renderings."""
