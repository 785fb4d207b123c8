"""A run's configuration: the schema, reading YAML within bounds, typed values, the checks before
any I/O (keys, I/O combinations, memory), shipped workloads."""
