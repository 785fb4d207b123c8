"""Darshan integration without the Darshan runtime: where the runtime is looked for, the
environment and config built, and, with a stand-in preload library compiled here, that every
rank really runs with it preloaded (before MPI starts) and the run records its log's name."""
import os
import subprocess
import sys
import textwrap

import pytest

from dlio_mpi.run import darshan
from mpirun import run_mpi
from datautil import own_summary

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

STANDIN = textwrap.dedent(r'''
    #include <stdio.h>
    #include <stdlib.h>
    #include <unistd.h>
    /* refers to H5Fcreate by name, as a runtime with the HDF5 module does */
    const char *dlio_test_symbol = "H5Fcreate";
    __attribute__((constructor)) static void mark(void) {
        const char *dir = getenv("DLIO_TEST_PRELOAD_MARK");
        if (!dir) return;
        char p[4096];
        snprintf(p, sizeof p, "%s/%d", dir, (int)getpid());
        FILE *f = fopen(p, "w");
        if (!f) return;
        const char *keys[] = {"DARSHAN_LOGFILE", "DARSHAN_CONFIG_PATH", "LD_PRELOAD",
                              "DXT_ENABLE_IO_TRACE", "DARSHAN_ENABLE_NONMPI", 0};
        for (int i = 0; keys[i]; i++) fprintf(f, "%s=%s\n", keys[i], getenv(keys[i]) ? getenv(keys[i]) : "");
        fclose(f);
    }
''')


@pytest.fixture(scope="module")
def standin(tmp_path_factory):
    d = tmp_path_factory.mktemp("standin")
    (d / "s.c").write_text(STANDIN)
    lib = d / "libdarshan.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(d / "s.c")], check=True)
    return str(lib)


def test_runtime_from_env(standin):
    assert darshan.find_runtime({darshan.LIB_ENV: standin, "PATH": ""}) == standin


def test_runtime_from_darshan_config(tmp_path, standin):
    libdir = os.path.dirname(standin)
    tool = tmp_path / "darshan-config"
    tool.write_text(f"#!/bin/sh\n[ \"$1\" = --libdir ] && echo {libdir}\n")
    tool.chmod(0o755)
    assert darshan.find_runtime({"PATH": str(tmp_path)}) == standin


def test_runtime_from_module_prefix(tmp_path, standin):
    (tmp_path / "lib").mkdir()
    os.symlink(standin, tmp_path / "lib" / "libdarshan.so")
    got = darshan.find_runtime({"PATH": "", "DARSHAN_PREFIX": str(tmp_path)})
    assert got == str(tmp_path / "lib" / "libdarshan.so")


def test_not_found_names_where_it_looked(tmp_path):
    with pytest.raises(darshan.DarshanNotFound) as ei:
        darshan.find_runtime({"PATH": str(tmp_path)})
    msg = str(ei.value)
    assert "darshan-config (not on PATH)" in msg and "/usr/local/lib" in msg
    assert darshan.LIB_ENV in msg and "\n" not in msg
    with pytest.raises(darshan.DarshanNotFound, match="is not a file"):
        darshan.find_runtime({darshan.LIB_ENV: str(tmp_path / "nope.so")})


def test_env_and_config(tmp_path):
    env, text = darshan.build_env({"LD_PRELOAD": "/x/other.so", "PATH": "/bin"},
                                  "/d/libdarshan.so", tmp_path, ["/data/set", "/ck"],
                                  hdf5_lib="/h/libhdf5.so", dxt=True, modmem_mib=64,
                                  max_records=8192)
    assert env["LD_PRELOAD"] == "/d/libdarshan.so:/h/libhdf5.so:/x/other.so"
    assert env["DARSHAN_LOGFILE"] == os.path.join(os.path.realpath(tmp_path), "dlio_mpi.run.darshan")
    assert env["DXT_ENABLE_IO_TRACE"] == "1" and env["DARSHAN_MODMEM"] == "64"
    assert env[darshan.ACTIVE] == "1" and "DARSHAN_ENABLE_NONMPI" not in env
    lines = text.splitlines()
    mods = darshan.PATH_MODULES
    assert f"NAME_EXCLUDE .* {mods}" in lines and "HEATMAP" not in mods
    assert f"NAME_INCLUDE ^/data/set/ {mods}" in lines and f"NAME_INCLUDE ^/ck/ {mods}" in lines
    assert lines.index(f"NAME_EXCLUDE .* {mods}") < lines.index(f"NAME_INCLUDE ^/data/set/ {mods}")
    assert "MOD_ENABLE DXT_POSIX,DXT_MPIIO" in lines and "MODMEM 64" in lines
    assert "MAX_RECORDS 8192 POSIX,MPI-IO,STDIO,H5F,H5D" in lines
    nonmpi, _ = darshan.build_env({}, "/d/l.so", tmp_path, [], nonmpi=True, pid=42)
    assert nonmpi["DARSHAN_ENABLE_NONMPI"] == "1"
    assert nonmpi["DARSHAN_LOGFILE"].endswith("/dlio_mpi.42.darshan")


def test_launcher_flags():
    env = {"LD_PRELOAD": "/d/l.so", "DARSHAN_LOGFILE": "/o/x.darshan", "PATH": "/bin"}
    assert darshan.launcher_flags(env, "openmpi") == \
        "-x LD_PRELOAD=/d/l.so -x DARSHAN_LOGFILE=/o/x.darshan"
    assert darshan.launcher_flags(env, "mpich") == \
        "-genv LD_PRELOAD /d/l.so -genv DARSHAN_LOGFILE /o/x.darshan"
    assert darshan.launcher_flags(env, "srun") == \
        "--export=ALL,LD_PRELOAD=/d/l.so,DARSHAN_LOGFILE=/o/x.darshan"


def test_hdf5_library_of_the_process():
    lib = darshan.process_hdf5_library()
    assert lib and "libhdf5" in lib and os.path.exists(lib)


@pytest.mark.parametrize("nonmpi", [False, True])
def test_every_rank_runs_preloaded(tmp_path, standin, nonmpi):
    marks = tmp_path / "marks"
    marks.mkdir()
    data, out = tmp_path / "data", tmp_path / "out"
    env = {darshan.LIB_ENV: standin, "DLIO_TEST_PRELOAD_MARK": str(marks)}
    args = ["run", "--darshan", "--dxt"] + (["--darshan-nonmpi"] if nonmpi else []) + [
        f"dataset.data_folder={data}", f"output.folder={out}", "dataset.num_files_train=4",
        "dataset.num_samples_per_file=2", "reader.batch_size=2", "train.epochs=1"]
    run_mpi(2, "run_cli.py", *args, env=env, timeout=120)
    found = [dict(line.split("=", 1) for line in p.read_text().splitlines())
             for p in marks.iterdir()]
    ranks = [m for m in found if m["DARSHAN_LOGFILE"]]
    assert len(ranks) == 2, found          # both ranks, each once, after the re-exec
    for m in ranks:
        assert m["LD_PRELOAD"].split(":")[0] == standin
        assert "libhdf5" in m["LD_PRELOAD"].split(":")[1]
        assert m["DXT_ENABLE_IO_TRACE"] == "1"
        assert m["DARSHAN_CONFIG_PATH"] == str(out / "darshan.conf")
        if nonmpi:
            assert m["DARSHAN_ENABLE_NONMPI"] == "1"
    logs = sorted(m["DARSHAN_LOGFILE"] for m in ranks)
    if nonmpi:
        assert len(set(logs)) == 2 and all(l.startswith(str(out) + "/dlio_mpi.") for l in logs)
    else:
        assert logs == [str(out / "dlio_mpi.run.darshan")] * 2
    summary = own_summary(out)
    assert summary["darshan_logs"] == sorted(set(logs))
    conf = (out / "darshan.conf").read_text()
    assert f"NAME_INCLUDE ^{os.path.realpath(data)}/ {darshan.PATH_MODULES}" in conf


def test_missing_runtime_stops_before_the_run(tmp_path):
    env = {"PATH": os.path.dirname(os.path.realpath(os.sys.executable)) + ":/usr/bin:/bin",
           "DLIO_MPI_DARSHAN_LIB": ""}      # also where a runtime is set for other tests
    p = run_mpi(1, "run_cli.py", "run", "--darshan", f"output.folder={tmp_path}/o",
                f"dataset.data_folder={tmp_path}/d", env=env, check=False, timeout=60)
    assert p.returncode == 2
    assert "no Darshan runtime (libdarshan.so) found; looked at:" in p.stdout
    assert not (tmp_path / "d").exists()


def test_regex_escape():
    assert darshan.posix_regex_escape("/a-b_c/d.e/f[1]+(g)") == r"/a-b_c/d\.e/f\[1\]\+\(g\)"
    assert darshan.posix_regex_escape("/d sp,c") == "/d[[:space:]]sp[[:punct:]]c"


def test_linked_directory_is_included_under_both_names(tmp_path):
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    text = darshan.config_text([str(tmp_path / "link")])
    assert f"^{tmp_path}/link/ " in text and f"^{os.path.realpath(tmp_path)}/real/ " in text


def test_stale_log_is_removed(tmp_path, standin):
    from dlio_mpi.config import loader as config
    cfg = config.load(["workload=default", f"output.folder={tmp_path}"])
    stale = tmp_path / "dlio_mpi.run.darshan"
    stale.write_bytes(b"old")
    env = darshan.prepare(cfg, env={darshan.LIB_ENV: standin, "PATH": ""})
    assert env["DARSHAN_LOGFILE"] == str(stale) and not stale.exists()


def test_config_does_not_start_mpi():
    """--darshan re-executes each rank after the config is loaded and checked: nothing on that
    path may initialize MPI (Open MPI then refuses the new process's MPI_Init)."""
    code = ("import sys; from dlio_mpi.config import loader as config; "
            "cfg = config.load(['io.write_first=true', 'dataset.num_files_train=2']); "
            "print('mpi4py.MPI' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False"


def test_darshan_env_says_what_it_wrote_and_how_to_use_it(tmp_path, standin):
    out, data = tmp_path / "out", tmp_path / "data"
    env = dict(os.environ, **{darshan.LIB_ENV: standin})
    p = subprocess.run([sys.executable, "-m", "dlio_mpi", "darshan-env",
                        f"dataset.data_folder={data}", f"output.folder={out}"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    # stdout: the options alone, so that $(...) gives them to the launcher
    assert p.stdout.count("\n") == 1 and p.stdout.startswith("-x LD_PRELOAD=")
    err = p.stderr.splitlines()
    assert f"darshan-env: wrote {out}/darshan.conf: Darshan's config, which keeps its " \
           "records to the run's data and checkpoint folders" in err
    assert (f"darshan-env: use: mpiexec $(python -m dlio_mpi darshan-env "
            f"dataset.data_folder={data} output.folder={out}) -n N python -m dlio_mpi run "
            f"dataset.data_folder={data} output.folder={out}") in err
    assert f"darshan-env: the run's log will be {out}/dlio_mpi.run.darshan, written at " \
           "MPI_Finalize" in err
    assert (out / "darshan.conf").exists()


def test_a_library_that_writes_no_log_is_said(tmp_path, standin):
    """The stand-in preloads like Darshan and writes no log: the run says so in one line
    (its summary.json names the log it expected)."""
    out = tmp_path / "out"
    args = ["run", "--darshan", f"dataset.data_folder={tmp_path}/data", f"output.folder={out}",
            "dataset.num_files_train=4", "dataset.num_samples_per_file=2", "reader.batch_size=2",
            "train.epochs=1"]
    p = run_mpi(2, "run_cli.py", *args, env={darshan.LIB_ENV: standin}, timeout=120)
    log = out / "dlio_mpi.run.darshan"
    said = [line for line in p.stdout.splitlines() if "no Darshan log" in line]
    assert said == [f"dlio_mpi: --darshan: no Darshan log at {log} after MPI_Finalize: the "
                    f"preloaded {standin} wrote none (summary.json names the log all the same)"]
    assert own_summary(out)["darshan_logs"] == [str(log)]


@pytest.mark.skipif(darshan.LIB_ENV not in os.environ,
                    reason="needs a Darshan runtime: set DLIO_MPI_DARSHAN_LIB")
def test_a_log_written_is_not_said_missing(tmp_path):
    out = tmp_path / "out"
    args = ["run", "--darshan", f"dataset.data_folder={tmp_path}/data", f"output.folder={out}",
            "dataset.num_files_train=4", "dataset.num_samples_per_file=2", "reader.batch_size=2",
            "train.epochs=1"]
    p = run_mpi(2, "run_cli.py", *args, timeout=120)
    assert "no Darshan log" not in p.stdout
    assert (out / "dlio_mpi.run.darshan").stat().st_size > 0
