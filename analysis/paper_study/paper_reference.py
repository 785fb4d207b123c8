"""The real applications of the DLIO paper as Darshan saw them on ALCF Theta (Darshan 3.1.8 with
DXT; the paper's authors' own analysis of the applications' logs), and the comparison of the
emulator's scaled-down runs with them.

Transfer sizes are in bytes (the analysis printed decimal KB and MB); seq and consec are
Darshan's POSIX_SEQ_READS and POSIX_CONSEC_READS over all POSIX reads, in percent; io_share is
the I/O time's share of the run time; files counts the files Darshan recorded.

The emulator's figures come from the same definitions (dlio_mpi_analysis.characterization.characterize): transfer sizes
from the trace of POSIX reads, seq and consec from the POSIX counters, the slowest rank's I/O
time over the run time, and the files recorded (POSIX and STDIO).
"""

from dlio_mpi.display import tables, units

REAL = {
    "imagenet": {"ranks": 512, "io_share": 0.0491, "files": 984, "xfer_mean": 261e3,
                 "xfer_median": 256e3, "seq": 99.7, "consec": 99.7},
    "cosmoflow_paper": {"ranks": 128, "io_share": 0.0090, "files": 1026, "xfer_mean": 262e3,
                        "xfer_median": 256e3, "seq": 99.99, "consec": 99.99},
    "ffn": {"ranks": 512, "io_share": 0.0108, "files": 3, "xfer_mean": 21.6e3,
            "xfer_median": 3.9e3, "seq": 95.2, "consec": 50.9},
    "frnn": {"ranks": 512, "io_share": 0.0109, "files": 2245, "xfer_mean": 1.1e6,
             "xfer_median": 255, "seq": 64.7, "consec": 61.7},
    "candle_nt3": {"ranks": 128, "io_share": 0.1730, "files": 4, "xfer_mean": 261e3,
                   "xfer_median": 256e3, "seq": 99.9, "consec": 99.9},
    "cosmic_tagger": {"ranks": 8, "io_share": 0.0470, "files": 21, "xfer_mean": 5.2e3,
                      "xfer_median": 2.5e3, "seq": 95.7, "consec": 88.2},
}
METRICS = ("io_share", "files", "xfer_mean", "xfer_median", "seq", "consec")
# the targets the scaled-down emulation is held to: transfer sizes within 10 % (relative),
# sequential and consecutive shares within 5 points, the calibrated I/O share within 25 %
# (relative); files are reported
TARGETS = {"io_share": ("relative", 0.25), "xfer_mean": ("relative", 0.10),
           "xfer_median": ("relative", 0.10), "seq": ("points", 5.0), "consec": ("points", 5.0)}

# Why the file count and the I/O share of a scaled-down run differ from the real one's.
NOTES = {
    "imagenet": "files: the real run's 512 ranks read 984 of the 1,024 shards; scaled down, "
                "each rank streams its own few shards",
    "cosmoflow_paper": "files: 1,024 data files and 2 more at 128 ranks; scaled down, each "
                       "rank streams its own few files",
    "ffn": "files: the label and image volumes are two files, as in the real run, which also "
           "read its training coordinates from a TFRecord file (not emulated)",
    "frnn": "files: 512 ranks read 2,245 shot files of 28,000 in the measured window; scaled "
            "down, a few per rank; seq and consec: a shot's load through a 4 MiB buffer is "
            "17-19 % sequential, and no load of these files with a median read of 255 B is "
            "over 43 %: the real figure includes reads the published figures do not describe",
    "candle_nt3": "files: the training CSV here; the real run also read the test CSV and two "
                  "small files",
    "cosmic_tagger": "files: one shared HDF5 file here; the real run's 21 include Python "
                     "modules and configuration read through POSIX; its events' small tables "
                     "(extents, image metadata) are left out",
}
IO_SHARE_NOTE = ("I/O share: compute per step is calibrated on this storage (a probe run "
                 "measures the I/O time per step, then runs are repeated with the compute "
                 "corrected until the share is close) so that the share matches the real "
                 "application's at the paper's scale; it follows the storage, not the pattern")


def emulated(row):
    """The six figures of one study row (dlio_mpi_analysis.paper_study.paper.paper_row)."""
    return {"io_share": row.get("io_share"), "files": row.get("files"),
            "xfer_mean": row.get("xfer_mean"), "xfer_median": row.get("xfer_median"),
            "seq": row.get("sequential_pct"), "consec": row.get("consecutive_pct")}


def errors(emu, real):
    """Per metric: the relative error (emulated / real - 1) for sizes, counts and the I/O
    share, the difference in points for seq and consec; None where a figure is missing."""
    out = {}
    for key in METRICS:
        e, r = emu.get(key), real.get(key)
        if e is None or r is None:
            out[key] = None
        elif key in ("seq", "consec"):
            out[key] = float(e) - float(r)
        else:
            out[key] = float(e) / float(r) - 1.0 if r else None
    return out


def within_targets(err):
    """Per targeted metric: True when the error is inside its target (None: no figure)."""
    return {key: None if err.get(key) is None else abs(err[key]) <= limit
            for key, (_, limit) in TARGETS.items()}


def comparison(rows):
    """{app: {metric: emulated value, ..., "real": {...}, "error": {...}, "within": {...}}}
    for the study's rows of applications the table holds."""
    out = {}
    for row in rows:
        app = row["application"]
        if app not in REAL:
            continue
        emu = emulated(row)
        real = {k: REAL[app][k] for k in METRICS}
        err = errors(emu, real)
        out[app] = {**emu, "real": real, "error": err, "within": within_targets(err)}
    return out


def _fmt(key, value):
    if value is None:
        return "-"
    if key == "io_share":
        return f"{100 * value:.2f}%"
    if key in ("seq", "consec"):
        return f"{value:.1f}%"
    if key == "files":
        return f"{int(value)}"
    return units.size(round(value), decimals=2)


def _fmt_err(key, value):
    if value is None:
        return "-"
    if key in ("seq", "consec"):
        return f"{value:+.1f} pt"
    return f"{100 * value:+.0f}%"


def render_comparison(rows, ranks):
    """The paper's table of the real applications beside the emulator's figures, with the error
    per cell ('*' marks an error outside its target), and the notes on scaling."""
    comp = comparison(rows)
    titles = {"io_share": "I/O share", "files": "files", "xfer_mean": "xfer mean",
              "xfer_median": "xfer median", "seq": "seq", "consec": "consec"}
    header = ["application", "", *[titles[k] for k in METRICS]]
    lines_ = []
    for app, c in comp.items():
        lines_.append([app, f"real ({REAL[app]['ranks']} ranks)",
                       *[_fmt(k, c["real"][k]) for k in METRICS]])
        lines_.append(["", f"emulated ({ranks} ranks)", *[_fmt(k, c[k]) for k in METRICS]])
        lines_.append(["", "error", *[_fmt_err(k, c["error"][k])
                                      + ("*" if c["within"].get(k) is False else "")
                                      for k in METRICS]])
    out = ["The real applications (ALCF Theta, Darshan) beside the emulator's scaled-down runs",
           "(error: relative for sizes, counts and I/O share, points for seq and consec; "
           "* outside the target: I/O share within 25 %, transfer sizes within 10 %, seq and "
           "consec within 5 points)",
           ""]
    out += tables.table(lines_, header, rule=True)
    out += ["", IO_SHARE_NOTE]
    out += [calibration_line(row) for row in rows if row["application"] in comp
            and row.get("calibration")]
    out += [f"{app}: {NOTES[app]}" for app in comp]
    return "\n".join(out) + "\n"


def calibration_line(row):
    """What the calibration of one row's I/O share reached, in one line."""
    runs, target = row["calibration"]["runs"], row.get("io_share_target")
    reached, chosen = row.get("io_share"), row["calibration"]["chosen"]
    head = (f"{row['application']}: I/O share {_fmt('io_share', reached)} (calibrated run "
            f"{chosen + 1} of {len(runs)}, target {_fmt('io_share', target)})")
    if row["calibration"]["within"]:
        return f"{head}: within {TARGETS['io_share'][1]:.0%}"
    return (f"{head}: NOT within {TARGETS['io_share'][1]:.0%}; shares of the runs: "
            + ", ".join(_fmt("io_share", r["io_share"]) for r in runs)
            + ("; the compute at its floor: the reads take less of a step on this storage "
               "than the loop's own work leaves them" if row["calibration"].get("at_floor")
               else ""))
