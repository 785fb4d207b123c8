"""What slows a job's training down: the vocabulary of findings, the rules on counters and traces,
on reads and on the run, the diagnose command's report and advise's report."""
