"""The reports' pages from Jinja2 templates (analysis/reporting/templates/): HTML with every
value escaped (autoescape), Markdown with a ``cell`` filter that keeps a value inside its table
cell. ``render("report.html", **values)``."""

import jinja2

_LOADER = jinja2.PackageLoader("dlio_mpi_analysis.reporting", "templates")
_HTML = jinja2.Environment(loader=_LOADER, autoescape=True, trim_blocks=True,
                           lstrip_blocks=True, keep_trailing_newline=True,
                           undefined=jinja2.StrictUndefined)
_TEXT = jinja2.Environment(loader=_LOADER, autoescape=False, trim_blocks=True,
                           lstrip_blocks=True, keep_trailing_newline=True,
                           undefined=jinja2.StrictUndefined)


def markdown_cell(value):
    """A value as Markdown table text: a '|' escaped, a line break made a space."""
    return str(value).replace("|", "\\|").replace("\n", " ")


_TEXT.filters["cell"] = markdown_cell


def render(name, **values):
    """The template ``name`` filled with ``values``: escaped for HTML when it ends in .html."""
    env = _HTML if name.endswith(".html") else _TEXT
    return env.get_template(name).render(**values)
