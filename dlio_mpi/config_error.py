"""The error of a configuration value that cannot be used, and the suggestion its line may
carry."""
import difflib


class ConfigError(ValueError):
    """A configuration value that cannot be used; str() is one line."""


def closest(word, options):
    """' (did you mean X?)' for the option nearest a mistyped word, else ''."""
    m = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return f" (did you mean {m[0]}?)" if m else ""
