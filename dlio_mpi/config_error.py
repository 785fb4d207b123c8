"""The error of a configuration value that cannot be used."""


class ConfigError(ValueError):
    """A configuration value that cannot be used; str() is one line."""
