"""`workloads check FILE`: every problem of a workload file found without any I/O beyond reading
it (no dataset, no MPI): each unknown section or key and each value that cannot be used, one
line apiece, then, when every value is usable, the checks of the whole configuration (and of a
job of the given size)."""
import copy

from dlio_mpi.config import loader as config
from dlio_mpi.config.errors import ConfigError
from dlio_mpi.config.bounded_yaml import read_yaml
from dlio_mpi.config.schema import SCHEMA


def problems(path, overrides=(), ranks=None):
    """The lines of the problems of the workload file at path with overrides on top (empty
    when it would run), and the loaded Config or None."""
    try:
        doc = config._normalize(read_yaml(path), path)
    except ConfigError as e:
        return [str(e)], None
    found = []
    scratch = {s: {k: copy.deepcopy(key.default) for k, key in keys.items()}
               for s, keys in SCHEMA.items()}
    for section, body in doc.items():
        for key, value in (body.items() if section in config.SECTION_ALIASES or
                           section in SCHEMA else [(None, None)]):
            one = {section: {key: value}} if key is not None else {section: {}}
            try:
                config._apply(scratch, one, path, set())
            except ConfigError as e:
                line = str(e)
                found.append(line if line.startswith(f"{path}:") else f"{path}: {line}")
    if found:
        return found, None
    try:
        cfg = config.load(overrides, config_file=path)
        if ranks:
            config.check_ranks(cfg, ranks)
    except ConfigError as e:
        return [str(e)], None
    return [], cfg
