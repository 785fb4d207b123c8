"""Folders the tool neither writes its files into nor cleans: the root, home directories and
system directories (a folder inside them is fine). clean refuses them because their other
contents are not the tool's; generate and run refuse the same folders, so that whatever they
write can always be removed by clean (a dataset strewn among a home directory's files could
not be)."""
import os

SYSTEM = ("/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib64", "/opt", "/proc",
          "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/var", "/work")


def refusal(path):
    """Why path is a protected folder (one phrase), or None."""
    real = os.path.realpath(path)
    homes = {os.path.realpath(os.path.expanduser("~"))}
    if os.path.isdir("/home"):
        homes.update(os.path.realpath(os.path.join("/home", d)) for d in os.listdir("/home"))
    if real in SYSTEM or real in homes:
        return f"{real} is a system or home directory"
    return None


def writing_refusal(cfg, checkpoints):
    """One line naming the first folder generate or run would write its files into that clean
    refuses (the data folder; the checkpoint folder when checkpoints are written), or None."""
    keys = [("dataset.data_folder", cfg.dataset.data_folder)]
    if checkpoints:
        keys.append(("checkpoint.checkpoint_folder", cfg.checkpoint.checkpoint_folder))
    for key, path in keys:
        why = refusal(path)
        if why:
            return (f"{key}={path}: {why}, where clean cannot remove what was written; "
                    f"give a folder of its own (e.g. {os.path.join(path, 'dlio_mpi')})")
    return None
