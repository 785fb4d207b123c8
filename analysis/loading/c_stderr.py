"""Capture what darshan-util's C code writes to file descriptor 2.

PyDarshan reports a failed record read as the end of the records: a truncated or corrupt log
silently yields fewer records (or none), and the only sign of the failure is darshan-util
printing ``Error: ...`` lines on the process's stderr. Capturing descriptor 2 around the C
calls turns those lines into data the loader can check, and keeps them off the user's terminal.
"""

import contextlib
import os
import sys
import tempfile

ERROR_PREFIX = "Error:"


class CapturedStderr:
    """Lines written to descriptor 2 while the capture was active (filled in on exit)."""

    def __init__(self):
        self.lines = []

    @property
    def errors(self):
        """darshan-util's error lines, without the ``Error:`` prefix."""
        return [line[len(ERROR_PREFIX):].strip() for line in self.lines
                if line.startswith(ERROR_PREFIX)]


@contextlib.contextmanager
def captured_c_stderr():
    """Redirect descriptor 2 to a temporary file; yield a CapturedStderr filled in on exit.

    Lines that are not darshan-util errors are written back to stderr, so nothing else that
    happened to print in the meantime is lost.
    """
    captured = CapturedStderr()
    sys.stderr.flush()
    saved_fd = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield captured
        finally:
            os.dup2(saved_fd, 2)
            os.close(saved_fd)
            sink.seek(0)
            captured.lines = sink.read().decode("utf-8", errors="replace").splitlines()
    others = [line for line in captured.lines if not line.startswith(ERROR_PREFIX)]
    if others:
        sys.stderr.write("\n".join(others) + "\n")
