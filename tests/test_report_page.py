"""The class report's web page: the Markdown rendered, the plot inline, no student's HTML."""

from __future__ import annotations

import base64

from autograder.pipeline.report import report_page


def test_the_page_renders_tables_inlines_the_plot_and_escapes_what_students_wrote(tmp_path):
    plot = tmp_path / "01_report.png"
    plot.write_bytes(b"\x89PNG fake")
    markdown = (
        "# 01: class report\n\n| status | students |\n|---|---|\n| ok | 3 |\n\n"
        f"![pass rates]({plot.name})\n\n"
        "- <script>alert(1)</script>: error: <img src=x onerror=alert(2)>\n"
    )
    page = report_page("01: class report & more", markdown, plot)
    assert page.startswith("<!DOCTYPE html>")
    assert "<title>01: class report &amp; more</title>" in page
    assert "<table>" in page and "<td>ok</td>" in page
    assert f'src="data:image/png;base64,{base64.b64encode(plot.read_bytes()).decode()}"' in page
    assert "<script>" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "prefers-color-scheme: dark" in page
