"""Types of command-line options: a number option is read as a configuration number is."""
import math

import click

from dlio_mpi.config.values import finite_number


class FiniteFloatRange(click.FloatRange):
    """A float option within bounds, written as a workload's number may be (1e-3 too); NaN and
    infinities are refused, which a range check alone lets through (NaN is neither below nor
    above a bound)."""

    name = "finite float range"

    def convert(self, value, param, ctx):
        if isinstance(value, str):
            try:
                value = finite_number(value)
            except ValueError:
                self.fail(f"{value!r} is not a finite number", param, ctx)
        elif isinstance(value, float) and not math.isfinite(value):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return super().convert(value, param, ctx)
