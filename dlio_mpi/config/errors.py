"""The error of a configuration value that cannot be used, and the suggestion its line may
carry."""
import difflib


class ConfigError(ValueError):
    """A configuration value that cannot be used; str() is one line."""


def closest(word, options):
    """' (did you mean X?)' for the option nearest a mistyped word, else ''."""
    m = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return f" (did you mean {m[0]}?)" if m else ""


def closest_key(section, key, schema):
    """' (did you mean S.K?)' for an unknown key of a known section: the same key name in
    another section, else the nearest key name of the section itself, else the nearest key
    name anywhere. Names are compared without their section, which every key of a section
    shares and would otherwise make any two of its keys look alike."""
    elsewhere = [s for s, keys in schema.items() if key in keys and s != section]
    if len(elsewhere) == 1:
        return f" (did you mean {elsewhere[0]}.{key}?)"
    m = difflib.get_close_matches(key, list(schema[section]), n=1, cutoff=0.7)
    if m:
        return f" (did you mean {section}.{m[0]}?)"
    names = {k: s for s, keys in schema.items() for k in keys}
    m = difflib.get_close_matches(key, list(names), n=1, cutoff=0.8)
    return f" (did you mean {names[m[0]]}.{m[0]}?)" if m else ""
