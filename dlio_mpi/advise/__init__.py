"""advise: find what slows a workload's I/O and measure the changes that remove it.

``mpiexec -n N python -m dlio_mpi advise (LOG | RUN_DIR | workload=NAME) [key=value ...]``:
every rank takes part in every run, rank 0 decides.

1. The starting workload (:mod:`.start`): a shipped or given workload with overrides, a
   dlio_mpi run directory (the configuration in its summary.json), or a Darshan log (the
   workload dlio_mpi_analysis.fitting.fit fits to it).
2. A baseline run with its op log kept, characterized (dlio_mpi_analysis.characterization.characterize; for a log, the
   log itself) and diagnosed (dlio_mpi_analysis.diagnosis.diagnose): findings, most severe first, each with its
   evidence and candidate changes (partial workloads).
3. Measurement (:mod:`.measure`): the baseline and every candidate in rounds, the order rotated
   from round to round so that no change always runs after the same one; then the best change
   of each finding that won beyond its spread, combined, against the baseline again. A
   candidate's speedup is the median over the rounds of the baseline's time per epoch over the
   candidate's in the same round; its spread is the largest distance of a round's ratio from
   that median. Time per epoch counts what training waits for: the epochs, the load of input
   read at start, evaluations and checkpoint writes, over the epochs.
4. The budget (seconds, start to report) bounds it all: a run starts only if the time left
   holds the longest run seen so far (with a tenth more); candidates of the least severe
   findings are left out first when three rounds of every candidate would not fit.
5. The result (:mod:`.result`): every measured change with its speedup and spread, the winner
   (the fastest beyond its spread, measured in two rounds or more) as ``winner.yaml``, notes on
   what the figures stand for (a dataset the page cache holds); dlio_mpi_analysis.diagnosis.advice_report renders
   it.

A candidate whose dataset differs (chunking, compression, files) reads its own copy, generated
beside the baseline's (``<data_folder>_advise_<hash>``) and removed at the end unless
``--keep-data``. ``--cold`` evicts the dataset from each host's page cache before every run.
"""
