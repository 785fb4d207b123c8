"""Sphinx configuration of the dlio_mpi documentation (Markdown pages through MyST).

Built with warnings as errors by tests/project/test_docs.py:
    python -m sphinx -W --keep-going -b html docs docs/_build/html
configuration.md is generated from dlio_mpi/config/schema.py by scripts/config_reference.py and kept
in the repository, so that it reads on a code host too; tests/project/test_docs.py fails when it is
not what the generator makes of the schema."""
project = "dlio_mpi"
author = "dlio_mpi authors"
extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
master_doc = "index"
exclude_patterns = ["_build"]
myst_heading_anchors = 3
html_theme = "alabaster"
