"""Sphinx configuration of the dlio_mpi documentation (Markdown pages through MyST).

Built with warnings as errors by tests/test_docs.py:
    python -m sphinx -W --keep-going -b html docs docs/_build/html
The configuration reference (configuration.md) is generated from dlio_mpi/schema.py by
scripts/config_reference.py before the pages are read."""
import os
import runpy

here = os.path.dirname(os.path.abspath(__file__))

project = "dlio_mpi"
author = "dlio_mpi authors"
extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
master_doc = "index"
exclude_patterns = ["_build"]
myst_heading_anchors = 3
html_theme = "alabaster"
html_static_path = []


def _generate_configuration_reference(app):
    generator = runpy.run_path(os.path.join(here, "..", "scripts", "config_reference.py"))
    text = generator["markdown"]()
    path = os.path.join(app.srcdir, "configuration.md")
    # written only when changed, so that an unchanged page is not rebuilt
    try:
        with open(path) as f:
            if f.read() == text:
                return
    except FileNotFoundError:
        pass
    with open(path, "w") as f:
        f.write(text)


def setup(app):
    app.connect("builder-inited", _generate_configuration_reference)
