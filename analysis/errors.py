"""Exceptions and warnings of the analysis package."""


class LogError(Exception):
    """A Darshan log that cannot be read: missing, truncated, corrupt or not a Darshan log.

    The message is one line that starts with the file's path.
    """


class FitError(ValueError):
    """The job gives nothing to fit (no data file was read)."""


class AnalysisWarning(UserWarning):
    """Base class of the warnings the analysis emits about a log's contents."""


class PartialLogWarning(AnalysisWarning):
    """A module's records are incomplete: the Darshan runtime ran out of memory for them."""


class HeatmapMismatchWarning(AnalysisWarning):
    """HEATMAP byte totals disagree with a module's counters (a sign of lost records)."""


class InvalidCounterWarning(AnalysisWarning):
    """A counter holds an impossible value (e.g. a negative time) and is counted as zero."""
