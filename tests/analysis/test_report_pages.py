"""The report's and advise's pages come from Jinja2 templates shipped with the package, HTML
escaped by the template engine."""
import os
import shutil
import warnings
from pathlib import Path

import dlio_mpi_analysis as analysis
from dlio_mpi_analysis.reporting import pages

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "analysis" / "reporting" / "templates"


def test_a_file_name_with_html_characters_is_escaped(log, tmp_path):
    name = "run <b>&'x'.darshan"
    source = tmp_path / name
    shutil.copy(log("release_logs__mpi-io-test-x86_64-3.0.0"), source)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", analysis.AnalysisWarning)
        files = analysis.write_report(str(source), tmp_path / "out")
    page = Path(files.html).read_text()
    assert "<b>" not in page and "run &lt;b&gt;&amp;&#39;x&#39;.darshan" in page
    # Markdown keeps the name as it is, a '|' escaped only
    assert f"| logs | {source} |" in Path(files.markdown).read_text()


def test_markdown_cells_keep_to_their_cell():
    assert pages.markdown_cell("a|b\nc") == "a\\|b c"


def test_the_pages_are_templates_shipped_as_package_data():
    used = {"report.html", "report.md", "advise.html", "advise.md", "style.css"}
    assert used <= set(os.listdir(TEMPLATES))
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"dlio_mpi_analysis.reporting" = ["templates/*.html", "templates/*.md", "templates/*.css"]' \
        in pyproject
    # no page of the analysis is put together in Python any more
    for path in (ROOT / "analysis").rglob("*.py"):
        assert "<!DOCTYPE" not in path.read_text(), path
