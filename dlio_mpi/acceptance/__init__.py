"""Storage acceptance as MLPerf Storage defines it (`python -m dlio_mpi acceptance`): the
minimum dataset by the rules (datasize), the dataset generated once (datagen), a warm-up then
five runs with the seed changed between them, judged against the workload's AU threshold and
the rules, each with its evidence (run)."""
