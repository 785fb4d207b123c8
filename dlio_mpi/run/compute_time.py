"""Emulated compute time: fixed seconds or draws from the distributions the DLIO benchmark
accepts (normal, uniform, gamma, exponential, Poisson), never negative."""
import numpy as np


def draw(spec, rng, n, stdev=0.0):
    """n durations (s) for spec: a number (with an optional normal stdev) or a distribution
    mapping as config_values.duration returns it."""
    if isinstance(spec, (int, float)):
        if stdev > 0:
            return np.clip(rng.normal(spec, stdev, n), 0.0, None)
        return np.full(n, float(spec))
    kind = spec["type"]
    if kind == "normal":
        out = rng.normal(spec["mean"], spec["stdev"], n) if spec["stdev"] > 0 else \
            np.full(n, spec["mean"])
    elif kind == "uniform":
        out = rng.uniform(spec["min"], spec["max"], n)
    elif kind == "gamma":
        out = rng.gamma(spec["shape"], spec["scale"], n)
    elif kind == "exponential":
        out = rng.exponential(spec["scale"], n)
    elif kind == "poisson":
        out = rng.poisson(spec["lam"], n).astype(np.float64)
    else:
        raise ValueError(f"unknown distribution {kind!r}")
    return np.clip(out, 0.0, None)


def mean(spec, stdev=0.0):
    """The expected duration of spec (s)."""
    if isinstance(spec, (int, float)):
        return float(spec)
    kind = spec["type"]
    return {"normal": lambda: spec["mean"], "uniform": lambda: (spec["min"] + spec["max"]) / 2,
            "gamma": lambda: spec["shape"] * spec["scale"], "exponential": lambda: spec["scale"],
            "poisson": lambda: spec["lam"]}[kind]()
