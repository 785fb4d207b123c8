"""darshan-util's C library, bound with cffi in ABI mode: log handles, job, names, records.

The library is the one the ``darshan`` wheel (PyDarshan) ships in ``darshan.libs/``. Its folder
is found without importing the ``darshan`` package: importing any ``darshan`` module runs
``darshan/__init__``, which imports pandas and PyDarshan's report (about half a second of a
fresh process that only needs the C library).

The declarations below are taken from darshan-util's headers (``darshan-logutils.h``,
``darshan-log-format.h`` and the modules' ``*-log-format.h``), only what reading a log needs.
The number of counters of a module is not declared: it is counted from the library's own
counter-name arrays (each ends with a ``<MODULE>_NUM_INDICES`` name), so the record layouts
always match the library that fills them.

Calling conventions of the library that its callers must respect:

- The functions report failures by printing ``Error: ...`` on descriptor 2 and returning -1
  (or nothing at all for the ``void`` ones): run them under ``captured_c_stderr``.
- ``darshan_log_get_name_records`` closes (frees) the handle when it fails and then leaves
  its count unset: :func:`name_records` returns None then, and the handle must not be used or
  closed again.
- Memory the library allocates (module table, mount table, names, records) is released with
  ``darshan_free``.
"""

import glob
import importlib.util
import os

import cffi

# darshan-log-format.h: DARSHAN_EXE_LEN is DARSHAN_JOB_RECORD_SIZE (4096) minus the size of
# struct darshan_job (7 * 8 + DARSHAN_JOB_METADATA_LEN) minus 1
DARSHAN_JOB_METADATA_LEN = 1024
DARSHAN_EXE_LEN = 4096 - (7 * 8 + DARSHAN_JOB_METADATA_LEN) - 1
DARSHAN_MAX_MODS = 64
HOSTNAME_SIZE = 64

DECLARATIONS = f"""
typedef uint64_t darshan_record_id;

struct darshan_log_map {{
    uint64_t off;
    uint64_t len;
}};

enum darshan_comp_type {{ DARSHAN_ZLIB_COMP, DARSHAN_BZIP2_COMP, DARSHAN_NO_COMP }};

struct darshan_fd_int_state;

struct darshan_fd_s {{
    char version[8];
    int swap_flag;
    uint64_t partial_flag;
    enum darshan_comp_type comp_type;
    struct darshan_log_map job_map;
    struct darshan_log_map name_map;
    struct darshan_log_map mod_map[{DARSHAN_MAX_MODS}];
    uint32_t mod_ver[{DARSHAN_MAX_MODS}];
    struct darshan_fd_int_state *state;
    int64_t first_heatmap_record_nbins;
    double first_heatmap_record_bin_width_seconds;
}};
typedef struct darshan_fd_s *darshan_fd;

struct darshan_job {{
    int64_t uid;
    int64_t start_time_sec;
    int64_t start_time_nsec;
    int64_t end_time_sec;
    int64_t end_time_nsec;
    int64_t nprocs;
    int64_t jobid;
    char metadata[{DARSHAN_JOB_METADATA_LEN}];
}};

struct darshan_base_record {{
    darshan_record_id id;
    int64_t rank;
}};

struct darshan_mnt_info {{
    char mnt_type[{DARSHAN_EXE_LEN}];
    char mnt_path[{DARSHAN_EXE_LEN}];
}};

struct darshan_mod_info {{
    const char *name;
    int len;
    int ver;
    int idx;
    int partial_flag;
}};

struct darshan_name_record_info {{
    darshan_record_id id;
    char *name;
}};

struct segment_info {{
    int64_t offset;
    int64_t length;
    double start_time;
    double end_time;
}};

struct dxt_file_record {{
    struct darshan_base_record base_rec;
    int64_t shared_record;
    char hostname[{HOSTNAME_SIZE}];
    int64_t write_count;
    int64_t read_count;
}};

struct darshan_heatmap_record {{
    struct darshan_base_record base_rec;
    double bin_width_seconds;
    int64_t nbins;
    int64_t *write_bins;
    int64_t *read_bins;
}};

darshan_fd darshan_log_open(const char *name);
void darshan_log_close(darshan_fd file);
int darshan_log_get_job(darshan_fd fd, struct darshan_job *job);
int darshan_log_get_job_runtime(darshan_fd fd, struct darshan_job job, double *runtime);
int darshan_log_get_exe(darshan_fd fd, char *buf);
int darshan_log_get_mounts(darshan_fd fd, struct darshan_mnt_info **mnt_data_array,
    int *count);
void darshan_log_get_modules(darshan_fd fd, struct darshan_mod_info **mods, int *count);
void darshan_log_get_name_records(darshan_fd fd, struct darshan_name_record_info **mods,
    int *count);
int darshan_log_get_record(darshan_fd fd, int mod_idx, void **buf);
void darshan_free(void *ptr);
char *darshan_log_get_lib_version(void);

extern char *posix_counter_names[];
extern char *posix_f_counter_names[];
extern char *stdio_counter_names[];
extern char *stdio_f_counter_names[];
extern char *mpiio_counter_names[];
extern char *mpiio_f_counter_names[];
extern char *h5f_counter_names[];
extern char *h5f_f_counter_names[];
extern char *h5d_counter_names[];
extern char *h5d_f_counter_names[];
"""

# module name as darshan-util's module table has it -> prefix of its counter names (and of the
# counter-name arrays, lower-cased), for the counter modules with a fixed-size record
COUNTER_PREFIXES = {"POSIX": "POSIX", "STDIO": "STDIO", "MPI-IO": "MPIIO", "H5F": "H5F",
                    "H5D": "H5D"}
# module name -> the record struct darshan-util fills for it (declared by _declare_records)
RECORD_TYPES = {"POSIX": "struct darshan_posix_file *", "STDIO": "struct darshan_stdio_file *",
                "MPI-IO": "struct darshan_mpiio_file *", "H5F": "struct darshan_hdf5_file *",
                "H5D": "struct darshan_hdf5_dataset *", "DXT_POSIX": "struct dxt_file_record *",
                "DXT_MPIIO": "struct dxt_file_record *",
                "HEATMAP": "struct darshan_heatmap_record *"}


def library_path():
    """The darshan-util shared library of the installed ``darshan`` wheel, or the name for the
    dynamic loader to search (a darshan-util installed from source) when the wheel has none."""
    spec = importlib.util.find_spec("darshan")  # finds the package without running it
    for folder in (spec.submodule_search_locations or []) if spec else []:
        found = sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(folder)),
                                              "darshan.libs", "libdarshan-util*.so*")))
        if found:
            return found[0]
    return "libdarshan-util.so"


ffi = cffi.FFI()
ffi.cdef(DECLARATIONS)
lib = ffi.dlopen(library_path())


def _names(array_name, end):
    array = getattr(lib, array_name)
    names = []
    while True:
        name = ffi.string(array[len(names)]).decode("ascii")
        if name == end:
            return tuple(names)
        names.append(name)


COUNTER_NAMES = {mod: _names(f"{prefix.lower()}_counter_names", f"{prefix}_NUM_INDICES")
                 for mod, prefix in COUNTER_PREFIXES.items()}
FCOUNTER_NAMES = {mod: _names(f"{prefix.lower()}_f_counter_names", f"{prefix}_F_NUM_INDICES")
                  for mod, prefix in COUNTER_PREFIXES.items()}


def _declare_records():
    """The counter modules' record structs, with the library's counter counts."""
    fields = {"POSIX": "", "STDIO": "", "MPI-IO": "", "H5F": "",
              "H5D": "uint64_t file_rec_id;"}  # H5D: the record id of the dataset's file
    declarations = []
    for mod, extra in fields.items():
        declarations.append(
            f"{RECORD_TYPES[mod][:-2]} {{ struct darshan_base_record base_rec; {extra} "
            f"int64_t counters[{len(COUNTER_NAMES[mod])}]; "
            f"double fcounters[{len(FCOUNTER_NAMES[mod])}]; }};")
    ffi.cdef("\n".join(declarations))


_declare_records()


def counter_names(module):
    """The integer counter names of a counter module ("POSIX", "MPI-IO", ...), in record order."""
    return COUNTER_NAMES[module]


def fcounter_names(module):
    """The floating-point counter names of a counter module, in record order."""
    return FCOUNTER_NAMES[module]


def open_log(path):
    """A handle on the log at ``path``, or None when darshan-util cannot open it."""
    handle = lib.darshan_log_open(os.fsencode(path))
    return handle if handle != ffi.NULL else None


def close_log(handle):
    lib.darshan_log_close(handle)


def log_version(handle):
    """The log's format version ("3.41"), as its header gives it."""
    return ffi.string(handle.version).decode("ascii", errors="replace")


def job(handle):
    """The job record as a dict: uid, start/end seconds and nanoseconds, nprocs, jobid, the
    run time darshan-util computes for the log's format version, and the metadata lines
    (``key=value``) as a dict."""
    record = ffi.new("struct darshan_job *")
    lib.darshan_log_get_job(handle, record)
    runtime = ffi.new("double *")
    lib.darshan_log_get_job_runtime(handle, record[0], runtime)
    metadata = {}
    # every metadata entry ends with a line break; what follows the last one is not an entry
    for line in ffi.string(record.metadata).decode("utf-8").split("\n")[:-1]:
        key, _, value = line.partition("=")
        metadata[key] = value
    return {"uid": record.uid, "start_time_sec": record.start_time_sec,
            "start_time_nsec": record.start_time_nsec, "end_time_sec": record.end_time_sec,
            "end_time_nsec": record.end_time_nsec, "nprocs": record.nprocs,
            "jobid": record.jobid, "run_time": runtime[0], "metadata": metadata}


def exe(handle):
    """The executable and its arguments, as the runtime recorded them."""
    # darshan-util copies the string without a terminator into a buffer it assumes is large
    # enough: a zeroed one of the job record's size
    buffer = ffi.new("char[]", 4096)
    lib.darshan_log_get_exe(handle, buffer)
    return ffi.string(buffer).decode("utf-8")


def mounts(handle):
    """(mount point, file system type) of each entry of the log's mount table, in its order."""
    table = ffi.new("struct darshan_mnt_info **")
    count = ffi.new("int *")
    lib.darshan_log_get_mounts(handle, table, count)
    try:
        return [(ffi.string(table[0][i].mnt_path).decode("utf-8"),
                 ffi.string(table[0][i].mnt_type).decode("utf-8")) for i in range(count[0])]
    finally:
        lib.darshan_free(table[0])


def modules(handle):
    """Each module with data in the log -> (its index for darshan_log_get_record, True if its
    data is marked partial), in the order of darshan-util's module table. Slots of modules
    this library does not know have no name and are left out."""
    table = ffi.new("struct darshan_mod_info **")
    count = ffi.new("int *")
    lib.darshan_log_get_modules(handle, table, count)
    try:
        found = {}
        for i in range(count[0]):
            info = table[0][i]
            if info.name != ffi.NULL:
                found[ffi.string(info.name).decode("ascii")] = (int(info.idx),
                                                                bool(info.partial_flag))
        return found
    finally:
        lib.darshan_free(table[0])


def name_records(handle):
    """Record id -> name for every name record of the log, or None when darshan-util failed
    (it has then closed the handle: see the module docstring)."""
    table = ffi.new("struct darshan_name_record_info **")
    count = ffi.new("int *", -1)
    lib.darshan_log_get_name_records(handle, table, count)
    if count[0] < 0:
        return None
    names = {}
    try:
        for i in range(count[0]):
            entry = table[0][i]
            try:
                names[int(entry.id)] = ffi.string(entry.name).decode("utf-8")
            finally:
                lib.darshan_free(entry.name)
    finally:
        lib.darshan_free(table[0])
    return names


def records(handle, index, record_type):
    """Each record of the module at ``index``, in the log's order, as a cffi pointer of
    ``record_type`` that is valid until the next one is read.

    Stops at the end of the module's data or at a failed read, which darshan-util does not
    tell apart from the end but for an ``Error:`` line on descriptor 2."""
    # darshan-util allocates a buffer for each record when *buf is NULL
    buf = ffi.new("void **")
    try:
        while lib.darshan_log_get_record(handle, index, buf) >= 1:
            yield ffi.cast(record_type, buf[0])
            lib.darshan_free(buf[0])
            buf[0] = ffi.NULL
    finally:
        # a read that failed after allocating leaves its buffer too
        lib.darshan_free(buf[0])
