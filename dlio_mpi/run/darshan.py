"""Running under Darshan: find the runtime, build each rank's environment, and put it in place
before MPI initializes.

Darshan instruments a process through LD_PRELOAD of libdarshan.so, and must be loaded before
MPI_Init; its HDF5 module also needs the process's own libhdf5 preloaded (or it fails with an
undefined symbol). So `run --darshan` has every rank re-execute itself, before importing MPI,
with the environment built here; the launcher (mpiexec of Open MPI or MPICH, srun) is not
involved, and the process keeps its PID and its place in the job. `launcher_flags` prints the
same environment as launcher options for those who prefer to pass it themselves.

The log is written at MPI_Finalize to a known name in the output directory (in non-MPI mode,
one log per process, named with its PID); a config file keeps Darshan's records to the data and
checkpoint directories, so that Python's own file opens do not use up the per-module record
limit."""
import os
import re
import shlex
import shutil
import subprocess
import sys

from dlio_mpi.files import safe_files

ACTIVE = "DLIO_MPI_DARSHAN_ACTIVE"      # set in the re-executed process
LIB_ENV = "DLIO_MPI_DARSHAN_LIB"        # explicit path of libdarshan.so
PREFIX_ENVS = ("DARSHAN_PREFIX", "DARSHAN_ROOT", "DARSHAN_RUNTIME_ROOT", "DARSHAN_HOME")
USUAL_DIRS = ("/usr/local/lib", "/usr/local/lib64", "/usr/lib", "/usr/lib64",
              "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/opt/darshan/lib")
LOG_NAME = "dlio_mpi.run.darshan"
CONFIG_NAME = "darshan.conf"


class DarshanNotFound(RuntimeError):
    """No Darshan runtime library; the message says where it looked."""


def find_runtime(env=None):
    """The path of libdarshan.so: from DLIO_MPI_DARSHAN_LIB, `darshan-config --libdir`, a
    Darshan prefix variable of a module environment, or the usual install locations."""
    env = os.environ if env is None else env
    looked = []
    explicit = env.get(LIB_ENV)
    if explicit:
        if os.path.isfile(explicit):
            return explicit
        raise DarshanNotFound(f"{LIB_ENV}={explicit} is not a file")
    looked.append(f"${LIB_ENV} (unset)")
    dc = shutil.which("darshan-config", path=env.get("PATH"))
    if dc:
        try:
            libdir = subprocess.run([dc, "--libdir"], capture_output=True, text=True,
                                    timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            libdir = ""
        cand = os.path.join(libdir, "libdarshan.so")
        if libdir and os.path.isfile(cand):
            return cand
        looked.append(f"darshan-config --libdir ({libdir or 'no answer'})")
    else:
        looked.append("darshan-config (not on PATH)")
    dirs = [os.path.join(env[v], sub) for v in PREFIX_ENVS if env.get(v)
            for sub in ("lib", "lib64")] + list(USUAL_DIRS)
    for d in dirs:
        cand = os.path.join(d, "libdarshan.so")
        if os.path.isfile(cand):
            return cand
    looked.extend(dirs)
    raise DarshanNotFound("no Darshan runtime (libdarshan.so) found; looked at: "
                          + ", ".join(looked) + f"; set {LIB_ENV} to its path")


def has_hdf5_module(lib):
    """Whether the runtime was built with its HDF5 module (it then refers to H5F symbols)."""
    try:
        with open(lib, "rb") as f:
            data = f.read()
    except OSError:
        return False
    return b"H5Fcreate" in data or b"H5Dread" in data


def process_hdf5_library():
    """The libhdf5 this package's extension is linked with, found with ldd (no import: MPI
    must not start before Darshan is in place)."""
    import importlib.machinery

    # found in the engines' folder without importing dlio_mpi.engines (which starts MPI)
    folder = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "engines")
    spec = importlib.machinery.PathFinder.find_spec("_engines", [folder])
    if spec is None or not spec.origin:
        return None
    try:
        out = subprocess.run(["ldd", spec.origin], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"libhdf5[^ ]*\.so[^ ]* => (\S+)", out)
    return m.group(1) if m else None


# Modules whose records are named by paths: the only ones the name filter applies to (a "*"
# would also empty HEATMAP, whose records are not files)
PATH_MODULES = "POSIX,MPI-IO,STDIO,H5F,H5D,PNETCDF_FILE,PNETCDF_VAR,DXT_POSIX,DXT_MPIIO"


def posix_regex_escape(text):
    """text as a POSIX extended regular expression matching itself (Darshan uses regex.h);
    blanks and commas, which Darshan's config parser splits on, become classes."""
    out = re.sub(r"([.\[\]()*+?{}|^$\\])", r"\\\1", text)
    return out.replace(" ", "[[:space:]]").replace("\t", "[[:space:]]") \
        .replace(",", "[[:punct:]]")


def config_text(directories, dxt=False, modmem_mib=0, max_records=0):
    """A Darshan config file: records only for names under the given directories (every other
    name excluded first, then those re-included), DXT tracing on request, module memory and
    record limits."""
    lines = ["# written by dlio_mpi: keep records to the run's data and checkpoint directories",
             f"NAME_EXCLUDE .* {PATH_MODULES}"]
    for d in directories:
        if not d:
            continue
        # records are named by the path as opened (absolute, links not resolved)
        for form in dict.fromkeys([os.path.abspath(d), os.path.realpath(d)]):
            lines.append(f"NAME_INCLUDE ^{posix_regex_escape(form)}/ {PATH_MODULES}")
    if dxt:
        lines.append("MOD_ENABLE DXT_POSIX,DXT_MPIIO")
    if modmem_mib:
        lines.append(f"MODMEM {int(modmem_mib)}")
    if max_records:
        lines.append(f"MAX_RECORDS {int(max_records)} POSIX,MPI-IO,STDIO,H5F,H5D")
    return "\n".join(lines) + "\n"


def build_env(base, lib, output_dir, directories, *, hdf5_lib=None, dxt=False, modmem_mib=0,
              max_records=0, nonmpi=False, pid=None):
    """The environment of an instrumented process, and the config file's text."""
    env = dict(base)
    preload = [lib] + ([hdf5_lib] if hdf5_lib else [])
    if env.get("LD_PRELOAD"):
        preload.append(env["LD_PRELOAD"])
    env["LD_PRELOAD"] = ":".join(preload)
    out = os.path.realpath(output_dir)
    name = LOG_NAME if not nonmpi else f"dlio_mpi.{pid or os.getpid()}.darshan"
    env["DARSHAN_LOGFILE"] = os.path.join(out, name)
    env["DARSHAN_CONFIG_PATH"] = os.path.join(out, CONFIG_NAME)
    if dxt:
        env["DXT_ENABLE_IO_TRACE"] = "1"          # runtimes older than MOD_ENABLE
    if modmem_mib:
        env["DARSHAN_MODMEM"] = str(int(modmem_mib))
    if nonmpi:
        env["DARSHAN_ENABLE_NONMPI"] = "1"
    env[ACTIVE] = "1"
    return env, config_text(directories, dxt, modmem_mib, max_records)


def launcher_flags(env, launcher):
    """The Darshan part of env as options of a launcher: openmpi (-x), mpich (-genv) or srun
    (--export)."""
    keys = [k for k in ("LD_PRELOAD", "DARSHAN_LOGFILE", "DARSHAN_CONFIG_PATH",
                        "DXT_ENABLE_IO_TRACE", "DARSHAN_MODMEM", "DARSHAN_ENABLE_NONMPI", ACTIVE)
            if k in env]
    if launcher == "openmpi":
        return " ".join(f"-x {k}={shlex.quote(env[k])}" for k in keys)
    if launcher == "mpich":
        return " ".join(f"-genv {k} {shlex.quote(env[k])}" for k in keys)
    if launcher == "srun":
        return "--export=ALL," + ",".join(f"{k}={env[k]}" for k in keys)
    raise ValueError(f"unknown launcher {launcher!r}: openmpi, mpich or srun")


def prepare(cfg, *, dxt=False, modmem_mib=0, max_records=0, nonmpi=False, env=None):
    """Find the runtime and build this process's instrumented environment; writes the config
    file into the output directory. Raises DarshanNotFound."""
    env = os.environ if env is None else env
    lib = find_runtime(env)
    hdf5_lib = process_hdf5_library() if has_hdf5_module(lib) else None
    out = cfg.output.folder
    dirs = [cfg.dataset.data_folder, cfg.checkpoint.checkpoint_folder]
    new_env, text = build_env(env, lib, out, dirs, hdf5_lib=hdf5_lib, dxt=dxt,
                              modmem_mib=modmem_mib, max_records=max_records, nonmpi=nonmpi)
    os.makedirs(out, exist_ok=True)
    # Darshan creates its log exclusively: a log left by an earlier run would mean no new one
    # (and a summary pointing at the old one)
    try:
        os.unlink(new_env["DARSHAN_LOGFILE"])
    except FileNotFoundError:
        pass
    path = new_env["DARSHAN_CONFIG_PATH"]
    safe_files.write_whole(path, text, temp=f"{path}.{os.getpid()}.part")
    return new_env


def reexec(env, argv):
    """Replace this process by itself under env (python -m dlio_mpi ARGV). MPI must not have
    been initialized yet: the launcher's daemon would refuse the new process's MPI_Init."""
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None and mpi.Is_initialized():
        raise RuntimeError("--darshan: MPI was initialized before the re-execution under Darshan")
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, "-m", "dlio_mpi", *argv], env)


def usage_lines(env, launcher, overrides, config_file=None):
    """What darshan-env wrote and how the options it printed are used (launcher_flags)."""
    args = ([f"--config {shlex.quote(config_file)}"] if config_file else []) \
        + [shlex.quote(o) for o in overrides]
    asked = " ".join(args + ([f"--launcher {launcher}"] if launcher != "openmpi" else []))
    launch = "srun" if launcher == "srun" else "mpiexec"
    return [f"wrote {env['DARSHAN_CONFIG_PATH']}: Darshan's config, which keeps its records "
            "to the run's data and checkpoint folders",
            f"use: {launch} $(python -m dlio_mpi darshan-env {asked}".rstrip() + ") -n N "
            f"python -m dlio_mpi run {' '.join(args)}".rstrip(),
            f"the run's log will be {env['DARSHAN_LOGFILE']}, written at MPI_Finalize"]


def missing_log_line(log, env=None):
    """One line when the log a run under Darshan should have left at MPI_Finalize is not
    there (a library that is not a working Darshan runtime writes none); None when it is."""
    if os.path.exists(log):
        return None
    env = os.environ if env is None else env
    lib = (env.get("LD_PRELOAD") or "?").split(":")[0]
    return (f"--darshan: no Darshan log at {log} after MPI_Finalize: the preloaded {lib} "
            "wrote none (summary.json names the log all the same)")


def active_log():
    """The log this process will leave (None when not under Darshan)."""
    if os.environ.get(ACTIVE) and os.environ.get("DARSHAN_LOGFILE"):
        return os.environ["DARSHAN_LOGFILE"]
    return None
