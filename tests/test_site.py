"""The course's website (``make site``, autograder/site/): built once, read as files, then browsed.

The site is built once for the module by ``python -m autograder.site`` (what ``make site``
runs), into this test's own folders, with a repository address so that the Colab links and
the clone command are made. Its notebooks' executions come from the cache under
``build/site-cache/``, which ``tests/test_notebooks.py`` fills earlier in the session with
the executions it makes anyway; run alone, the build executes them (about 35 s).

The browser part opens every page from a local static server in Debian's Chromium
(Playwright, as ``tests/test_browser.py``) and checks it as a visitor would: no console
error, every image loaded, every internal link resolving, no horizontal scroll at 375 px,
search finding each lesson, and no serious or critical violation reported by axe-core.

The zh-CN edition is built beside the English one; its pages show the English
executions under Chinese prose, and every page of each edition links to itself in the
other (the language switch), which the file checks follow on every page and the browser
checks on the zh-CN home page, first lesson and search page.
"""

from __future__ import annotations

import copy
import functools
import html
import http.server
import json
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

import nbformat
import pytest
from nbgrader import utils

from autograd_pitfalls import draw
from autograd_pitfalls.walk import walk_graph
from autograder.course import REPO
from autograder.site import execute
from autograder.site.editions import EDITIONS, Edition
from autograder.site.leaks import (
    MARKERS,
    course_secrets,
    find_leaks,
    secret_block_lines,
    secret_lines,
)
from autograder.site.pages import Repository, home_page, run_box
from autograder.site.sphinx_ext import svg_text_alternative, tex_to_mathml

REPOSITORY = "https://github.com/example-org/autograd-pitfalls"
ENGLISH = EDITIONS[0]
CHINESE = next(edition for edition in EDITIONS if edition.language == "zh-CN")
LESSONS = ENGLISH.lessons()
PHONE_WIDTH = 375


@dataclass(frozen=True)
class Built:
    """The site built for this module: its folder, the staged sources, what the build printed."""

    site: Path
    work: Path
    output: str

    def lesson(self, lesson: str, edition: Edition = ENGLISH) -> Path:
        return self.site / edition.language / "lessons" / f"{lesson}.html"

    def staged(self, lesson: str, edition: Edition = ENGLISH) -> nbformat.NotebookNode:
        path = self.work / edition.language / "src" / "lessons" / f"{lesson}.ipynb"
        return nbformat.read(path, as_version=4)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    folder = tmp_path_factory.mktemp("site")
    site, work = folder / "site", folder / "work"
    command = [
        sys.executable,
        "-m",
        "autograder.site",
        f"--out={site}",
        f"--work={work}",
        f"--repository={REPOSITORY}",
    ]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"make site failed:\n{done.stdout}\n{done.stderr}"
    return Built(site, work, done.stdout)


def _tiny_graph():
    import torch

    a = torch.ones(3, requires_grad=True)
    loss = (a * a).sum()
    return loss, {"a": a, "loss": loss}


# The text alternative of a graph (src/autograd_pitfalls/graph.py)


def test_a_graphs_text_alternative_goes_from_the_output_down_to_the_leaves():
    loss, names = _tiny_graph()
    drawing = draw(loss, names=names)
    text = drawing.description
    assert text.startswith("Autograd graph, from the output down to the leaves. loss () →")
    order = ["loss ()", "SumBackward0:", "MulBackward0:", "AccumulateGrad (a):", "leaf a (3,)"]
    positions = [text.index(words) for words in order]
    assert positions == sorted(positions), text
    assert "saved other = a (3,), saved v0 · now v0" in text
    assert text == draw(loss, names=names).description  # the same words every time
    assert walk_graph(loss, names=names)  # the drawing is made from this analysis


def test_a_graphs_text_alternative_says_what_is_stale_and_where_backward_raises():
    import torch

    a = torch.ones(3, requires_grad=True)
    b = a.exp()
    loss = (b * a).sum()
    b.add_(1)
    text = draw(loss, names={"a": a, "b": b, "loss": loss}).description
    assert "MulBackward0 (backward() raises here): " in text
    assert "self = b (3,), saved at v0, now v1, modified in place" in text


def test_the_svg_of_a_graph_names_itself_with_its_text_alternative():
    loss, names = _tiny_graph()
    names['x<&"y'] = names.pop("a")  # a name that must be escaped in XML
    drawing = draw(loss, names=names)
    bundle = drawing._repr_mimebundle_()
    svg = bundle["image/svg+xml"]
    assert bundle["text/plain"] == drawing.description  # a text-only front end shows it
    assert re.search(r'<svg\b[^>]*\brole="img"', svg)
    assert svg_text_alternative(svg) == drawing.description
    assert f"<title>{html.escape(drawing.description)}</title>" in svg
    assert 'leaf x<&"y (3,)' in drawing.description
    assert drawing.svg_html().count('aria-label="') == 1  # the inline form too


# The secrets a site must not hold (autograder/site/leaks.py)


SOURCE = '''\
def answer(x):
    """Doubles x."""
    ### BEGIN SOLUTION
    doubled = x * 2  # the whole trick
    return doubled
    ### END SOLUTION
print(answer(1))
### BEGIN HIDDEN TESTS
def observe(case):
    return answer(case["x"])
### BEGIN JUDGE
expected_value = compute_reference(case)
### END JUDGE
### END HIDDEN TESTS
'''


def _student(tmp_path: Path, code: str) -> Path:
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    path = tmp_path / "student.ipynb"
    nbformat.write(notebook, path)
    return path


def test_secret_lines_are_the_solution_and_hidden_lines_a_learner_is_not_given(tmp_path):
    source = tmp_path / "source.py"
    source.write_text(SOURCE)
    assert list(secret_block_lines(SOURCE)) == [
        "doubled = x * 2 # the whole trick",
        "return doubled",
        "def observe(case):",
        'return answer(case["x"])',
        "expected_value = compute_reference(case)",
    ]
    given = 'def answer(x):\n    raise NotImplementedError\n    return answer(case["x"]) + 1'
    student = _student(tmp_path, given)
    secrets = secret_lines([source], [student])
    assert set(secrets) == {
        "doubled = x * 2 # the whole trick",
        "doubled = x * 2",  # without its comment
        "def observe(case):",
        "expected_value = compute_reference(case)",
    }, "too short ('return doubled') or given to the learner ('return answer(...)'): skipped"
    assert secrets["expected_value = compute_reference(case)"] == "source.py:12"


def test_leak_finder_sees_a_secret_through_highlighting_escapes_and_json(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    secret = 'assert x["is_leaf"] == True, "a leaf"'
    clean = "<p>nothing here</p>"
    highlighted = (
        '<pre><span class="k">assert</span> <span class="n">x</span><span class="p">[</span>'
        '<span class="s2">&quot;is_leaf&quot;</span><span class="p">]</span>  '
        '<span class="o">==</span> <span class="kc">True</span><span class="p">,</span> '
        '<span class="s2">&quot;a leaf&quot;</span></pre>'
    )
    (site / "clean.html").write_text(clean)
    (site / "page.html").write_text(highlighted)
    (site / "data.json").write_text(json.dumps({"cells": [{"source": [secret[:10], secret[10:]]}]}))
    (site / "index.js").write_text("Search.setIndex(" + json.dumps({"t": secret}) + ")")
    (site / "image.png").write_bytes(secret.encode())  # a binary file is not text
    found = {(leak.file, leak.origin) for leak in find_leaks(site, {secret: "q1"})}
    assert found == {("page.html", "q1"), ("data.json", "q1"), ("index.js", "q1")}


# Pages and cache (autograder/site/pages.py, execute.py)


def test_an_execution_is_kept_under_what_its_outputs_depend_on(tmp_path, monkeypatch):
    notebook = tmp_path / "01_x.ipynb"
    shutil.copy(ENGLISH.student_notebook(LESSONS[0]), notebook)
    helpers = tmp_path / "helpers"
    helpers.mkdir()
    (helpers / "graph.py").write_text("DRAW = 1\n")
    monkeypatch.setattr(execute, "HELPERS", helpers)
    first = execute.fingerprint(notebook)
    assert execute.fingerprint(notebook) == first
    (helpers / "graph.py").write_text("DRAW = 2\n")  # a helper the outputs come from
    second = execute.fingerprint(notebook)
    notebook.write_text(notebook.read_text().replace("leaf", "Leaf", 1))  # the notebook
    assert len({first, second, execute.fingerprint(notebook)}) == 3


def test_a_broken_demonstration_is_not_kept(tmp_path):
    notebook = tmp_path / "01_x.ipynb"
    broken = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 / 0")])
    broken.cells[0].outputs = [nbformat.v4.new_output("error", ename="ZeroDivisionError")]
    nbformat.write(broken, notebook)
    with pytest.raises(execute.ExecutionError, match="a cell outside the exercises' tests raised"):
        execute.keep(notebook, broken, tmp_path / "cache")
    assert not (tmp_path / "cache").exists()


def test_without_a_repository_address_the_box_has_no_clone_and_no_colab():
    box = run_box(ENGLISH, LESSONS[0], None)
    assert "make lab" in box and "make check" in box and "](path:../downloads/" in box
    assert "git clone" not in box and "colab" not in box.lower()
    with_address = run_box(ENGLISH, LESSONS[0], Repository(REPOSITORY))
    assert f"git clone {REPOSITORY} && cd autograd-pitfalls" in with_address
    colab = f"https://colab.research.google.com/github/example-org/autograd-pitfalls/blob/main/notebooks/{LESSONS[0]}/{LESSONS[0]}.ipynb"
    assert colab in with_address


def test_the_home_page_is_the_readmes_front_matter_with_its_lessons_linked():
    titles = dict.fromkeys(LESSONS, "title")
    page = home_page(ENGLISH, titles, None)
    readme = ENGLISH.readme.read_text()
    assert page.startswith(readme.splitlines()[0])
    assert "## Two commands" not in page  # only the front matter
    assert "Read it on the web" in readme and "Read it on the web" not in page
    for lesson in LESSONS:
        assert f"[{lesson}](lessons/{lesson}.ipynb)" in page
    assert "](docs/" not in page  # a link to a file of the repository needs its address
    assert f"]({REPOSITORY}/blob/main/docs/" in home_page(ENGLISH, titles, Repository(REPOSITORY))


def test_math_becomes_mathml_even_where_docutils_lacks_a_command():
    assert tex_to_mathml(r"[200, \dots, 0]", block=False).startswith("<math")
    assert "<mtext>loss</mtext>" in tex_to_mathml(r"\text{loss} = \sum_i a_i", block=False)


# The built site, as files


@pytest.mark.slow
def test_the_build_prints_its_time_and_size(built: Built):
    summary = built.output.strip().splitlines()[-1]
    assert re.fullmatch(
        r"Site built in [\d.]+ s \(executing \d+ notebooks [\d.]+ s, \d+ from the cache, "
        r"\d+ translations with their original's outputs; "
        r"Sphinx [\d.]+ s\): \d+ files, [\d.]+ MB in .+",
        summary,
    ), summary


@pytest.mark.slow
def test_no_file_of_the_site_holds_a_solution_a_hidden_test_or_a_machine_path(built: Built):
    notebooks = [ENGLISH.student_notebook(lesson) for lesson in LESSONS]
    secrets = course_secrets(notebooks)
    for lesson in LESSONS:  # every source gives secrets: the search cannot be vacuous
        assert any(origin.startswith(f"{lesson}.py:") for origin in secrets.values()), lesson
    assert set(MARKERS) <= set(secrets) and str(REPO) in secrets
    assert any(path.suffix == ".ipynb" for path in built.site.rglob("*"))  # downloads searched
    assert (built.site / "en" / "searchindex.js").is_file()
    leaks = find_leaks(built.site, secrets)
    assert not leaks, "\n".join(map(str, leaks))


@pytest.mark.slow
def test_the_leak_check_fails_when_a_solution_line_is_planted_in_a_page(built: Built, tmp_path):
    """The test of the test above: a solution line in a page, highlighted as Sphinx does."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    site = tmp_path / "site"  # the two files planted in, as built
    for name in (f"en/lessons/{LESSONS[1]}.html", "en/searchindex.js"):
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(built.site / name, site / name)
    source = REPO / "solutions" / LESSONS[0] / f"{LESSONS[0]}.py"
    notebooks = [ENGLISH.student_notebook(lesson) for lesson in LESSONS]
    secrets = secret_lines([source], notebooks)
    planted = next(line for line in secrets if "=" in line and len(line) > 30)
    page = site / "en" / "lessons" / f"{LESSONS[1]}.html"
    code = highlight(planted, PythonLexer(), HtmlFormatter())
    page.write_text(page.read_text().replace("</main>", f"{code}</main>", 1))
    index = site / "en" / "searchindex.js"
    index.write_text(index.read_text() + "\n// ### BEGIN HIDDEN TESTS\n")
    found = {(leak.file, leak.secret) for leak in find_leaks(site, course_secrets(notebooks))}
    assert {
        (f"en/lessons/{LESSONS[1]}.html", planted),
        ("en/searchindex.js", "BEGIN HIDDEN TESTS"),
    } <= found
    assert {file for file, _ in found} == {f"en/lessons/{LESSONS[1]}.html", "en/searchindex.js"}


@pytest.mark.slow
@pytest.mark.parametrize("lesson", LESSONS)
def test_a_lesson_page_is_the_student_notebook_with_its_demonstrations_run(built, lesson):
    student = nbformat.read(ENGLISH.student_notebook(lesson), as_version=4)
    page = built.staged(lesson)
    code = [cell for cell in page.cells if cell.cell_type == "code"]
    assert [cell.source for cell in code] == [
        cell.source for cell in student.cells if cell.cell_type == "code"
    ], "the page runs the student notebook's code, and nothing else"
    graded = [cell for cell in code if utils.is_grade(cell)]
    assert graded and all(not cell.outputs for cell in graded), "no test output on a page"
    assert all("hide-input" in cell.metadata.tags for cell in graded)
    demos = [cell for cell in code if not utils.is_grade(cell)]
    assert sum(bool(cell.outputs) for cell in demos) >= len(demos) / 3
    errors = [o for cell in demos for o in cell.outputs if o.output_type == "error"]
    assert not errors
    svgs = [o for cell in demos for o in cell.outputs if "image/svg+xml" in o.get("data", {})]
    assert svgs, "each lesson page shows its graphs"


@pytest.mark.slow
@pytest.mark.parametrize("lesson", LESSONS)
def test_a_lesson_page_has_its_toc_neighbours_box_download_and_colab(built, lesson):
    text = built.lesson(lesson).read_text()
    assert 'id="pst-page-toc-nav"' in text and text.count("toc-entry") >= 3
    index = LESSONS.index(lesson)
    neighbours = re.findall(r'<a class="(left)-prev"\s+href="([^"]+)"', text)
    neighbours += re.findall(r'<a class="(right)-next"\s+href="([^"]+)"', text)
    expected = {("left", f"{LESSONS[index - 1]}.html" if index else "../index.html")}
    if index + 1 < len(LESSONS):
        expected.add(("right", f"{LESSONS[index + 1]}.html"))
    assert set(neighbours) == expected
    words = html.unescape(re.sub(r"<[^>]+>", "", text))
    assert "Run it yourself" in words and "make lab" in words and "make check" in words
    assert f"git clone {REPOSITORY}" in words
    [download] = re.findall(r'href="(\.\./_downloads/[0-9a-f]+/[^"]+\.ipynb)"', text)
    file = (built.lesson(lesson).parent / download).resolve()
    assert file.read_bytes() == ENGLISH.student_notebook(lesson).read_bytes()
    colab = f"https://colab.research.google.com/github/example-org/autograd-pitfalls/blob/main/notebooks/{lesson}/{lesson}.ipynb"
    assert f'href="{colab}"' in text


def _code(page: nbformat.NotebookNode) -> list[tuple[str, list]]:
    return [(cell.source, cell.outputs) for cell in page.cells if cell.cell_type == "code"]


@pytest.mark.slow
@pytest.mark.parametrize("lesson", LESSONS)
def test_a_zh_cn_lesson_page_is_the_english_code_and_outputs_under_chinese_prose(built, lesson):
    english, chinese = built.staged(lesson), built.staged(lesson, CHINESE)
    assert _code(chinese) == _code(english), "the same code, the same outputs"
    student = nbformat.read(CHINESE.student_notebook(lesson), as_version=4)
    prose = [cell.source for cell in student.cells if cell.cell_type == "markdown"]
    shown = [cell.source for cell in chinese.cells if cell.cell_type == "markdown"]
    assert all(text in shown for text in prose), "every cell of the zh-CN prose is on the page"
    assert not set(prose) & {c.source for c in english.cells if c.cell_type == "markdown"}
    text = built.lesson(lesson, CHINESE).read_text()
    assert '<html lang="zh-CN"' in text
    words = html.unescape(re.sub(r"<[^>]+>", "", text))
    assert CHINESE.words.run_title in words and CHINESE.words.exercise_note in words
    [download] = re.findall(r'href="(\.\./_downloads/[0-9a-f]+/[^"]+\.ipynb)"', text)
    file = (built.lesson(lesson, CHINESE).parent / download).resolve()
    assert file.read_bytes() == CHINESE.student_notebook(lesson).read_bytes()
    colab = f"https://colab.research.google.com/github/example-org/autograd-pitfalls/blob/main/notebooks/zh-CN/{lesson}/{lesson}.ipynb"
    assert f'href="{colab}"' in text


@pytest.mark.slow
def test_every_page_of_each_edition_links_to_the_same_page_in_the_other(built):
    editions = [ENGLISH, CHINESE]
    for edition in editions:
        folder = built.site / edition.language
        pages = [
            page
            for page in folder.rglob("*.html")
            if not page.relative_to(folder).parts[0].startswith("_")
        ]
        assert len(pages) >= len(LESSONS) + 3  # the home page, the lessons, search, index
        for page in pages:
            text = page.read_text()
            nav = re.search(r'<nav class="site-language-switch"[^>]*>(.*?)</nav>', text, re.S)
            assert nav, f"{page.relative_to(built.site)} has no language switch"
            assert f'aria-current="true">{edition.name}<' in nav.group(1)
            links = {
                code: href
                for href, code in re.findall(
                    r'<a class="site-language" href="([^"]+)" hreflang="([^"]+)"', nav.group(1)
                )
            }
            assert set(links) == {other.language for other in editions if other != edition}
            for code, href in links.items():
                target = (page.parent / href).resolve()
                assert target == (built.site / code / page.relative_to(folder)).resolve()
                assert target.is_file(), f"{page.relative_to(built.site)}: {href} leads nowhere"
                assert f'<link rel="alternate" hreflang="{code}" href="{href}">' in text


def test_a_translated_edition_executes_its_own_notebook_when_its_code_differs(
    tmp_path, monkeypatch
):
    english = nbformat.v4.new_notebook()
    english.cells = [nbformat.v4.new_markdown_cell("Hello"), nbformat.v4.new_code_cell("1 + 1")]
    chinese = copy.deepcopy(english)
    chinese.cells[0].source = "你好"
    paths = {"en": tmp_path / "en.ipynb", "zh": tmp_path / "zh.ipynb"}
    ran = []

    def executed(notebook: Path, cache: Path) -> tuple[nbformat.NotebookNode, bool]:
        ran.append(notebook.stem)
        done = nbformat.read(notebook, as_version=4)
        for cell in done.cells:
            if cell.cell_type == "code":
                cell.outputs = [nbformat.v4.new_output("stream", text=f"ran {notebook.stem}")]
        return done, False

    monkeypatch.setattr(execute, "executed", executed)
    nbformat.write(english, paths["en"])
    nbformat.write(chinese, paths["zh"])
    same, _ = execute.executed_like(paths["zh"], paths["en"], tmp_path)
    assert ran == ["en"] and same.cells[0].source == "你好"
    assert same.cells[1].outputs[0].text == "ran en"
    chinese.cells[1].source = "1 + 2"
    nbformat.write(chinese, paths["zh"])
    differs, _ = execute.executed_like(paths["zh"], paths["en"], tmp_path)
    assert ran == ["en", "zh"] and differs.cells[1].outputs[0].text == "ran zh"


@pytest.mark.slow
@pytest.mark.parametrize("lesson", LESSONS)
def test_every_graph_on_a_page_has_a_text_alternative_made_from_it(built, lesson):
    page = built.lesson(lesson)
    images = re.findall(r'<img alt="([^"]*)" src="([^"]+)"', page.read_text())
    graphs = [
        (html.unescape(alt), src)
        for alt, src in images
        if "Generated by graphviz" in (page.parent / src).read_text(errors="replace")
    ]
    assert graphs
    for alt, src in graphs:
        assert alt.startswith("Autograd graph, from the output down to the leaves."), src
        assert alt == svg_text_alternative((page.parent / src).read_text())
    assert all(alt.strip() for alt, _ in images), "every image has a text alternative"


@pytest.mark.slow
def test_the_site_needs_no_network_and_shows_math_as_mathml(built: Built):
    outside = re.compile(r'<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)="(?:https?:)?//')
    for page in built.site.rglob("*.html"):
        text = page.read_text()
        assert not outside.search(text), f"{page.name} loads {outside.search(text).group(0)}"
    lesson = built.lesson(LESSONS[0]).read_text()
    assert "<math" in lesson and not re.search(r"<script[^>]*mathjax", lesson, re.IGNORECASE)


# The built site, in a browser


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server(built: Built) -> Iterator[str]:
    """A static server of the built site, as any static host serves it."""
    handler = functools.partial(_QuietHandler, directory=str(built.site))
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as httpd:
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        yield f"http://127.0.0.1:{httpd.server_port}"
        httpd.shutdown()


@pytest.fixture(scope="module")
def chromium():
    from playwright.sync_api import sync_playwright

    from tests.test_browser import _chromium

    executable = _chromium()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield browser
        browser.close()


def _pages(edition: Edition = ENGLISH) -> list[str]:
    lessons = [f"lessons/{lesson}.html" for lesson in edition.lessons()]
    return [f"{edition.language}/{page}" for page in ["index.html", *lessons, "search.html"]]


# Every English page; of the zh-CN edition, the pages that differ in kind (the lessons share
# one template, and their content is the English pages' code and outputs, checked as files).
PAGES = _pages() + [
    f"zh-CN/{page}" for page in ("index.html", f"lessons/{LESSONS[0]}.html", "search.html")
]
# axe's colour-contrast rule takes 2 to 16 s per lesson page (thousands of highlighted
# code spans). The lessons share one template and one stylesheet, and their outputs are of
# the same kinds (printed text, graphs, plots: no notebook writes to stderr, as
# tests/test_notebooks.py holds): it runs, in both themes, on the home page and the first
# lesson; every other rule runs on every page.
CONTRAST_PAGES = {"en/index.html", f"en/lessons/{LESSONS[0]}.html"}


def _internal_links(page) -> list[str]:
    return page.evaluate(
        "() => [...document.querySelectorAll('a[href]')].map(a => a.href)"
        ".filter(h => h.startsWith(location.origin))"
    )


def _resolves(site: Path, base: str, url: str) -> bool:
    """Whether ``url`` names a file of the site, and its ``#fragment`` an element there."""
    parsed = urlparse(url)
    path = site / unquote(parsed.path).lstrip("/")
    if path.is_dir():
        path = path / "index.html"
    if not path.is_file():
        return False
    if not parsed.fragment or path.suffix != ".html":
        return True
    return f'id="{parsed.fragment}"' in path.read_text()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("locale", "edition"),
    [("en-US", "en"), ("zh-CN", "zh-CN"), ("zh-TW", "zh-CN"), ("fr-FR", "en")],
)
def test_the_sites_root_leads_to_the_edition_of_the_browsers_language(
    server, chromium, locale, edition
):
    context = chromium.new_context(locale=locale)
    page = context.new_page()
    page.goto(f"{server}/index.html")
    page.wait_for_url(f"{server}/{edition}/", timeout=10_000)
    assert page.title().startswith("autograd-pitfalls")
    assert page.evaluate("document.documentElement.lang") == edition
    context.close()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("path", "scheme"),
    [(path, "light") for path in PAGES] + [(path, "dark") for path in sorted(CONTRAST_PAGES)],
)
def test_a_page_loads_whole_and_passes_axe_and_fits_a_phone(built, server, chromium, path, scheme):
    from axe_playwright_python.sync_playwright import Axe

    context = chromium.new_context(viewport={"width": 1280, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    errors: list[str] = []
    page.on(
        "console", lambda message: errors.append(message.text) if message.type == "error" else None
    )
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{server}/{path}", wait_until="load")
    page.wait_for_load_state("networkidle")
    assert page.evaluate("document.documentElement.dataset.theme") == scheme
    # Collected before axe runs: axe fetches stylesheets itself, and reads one @import
    # relative to the page (a 404 of axe's own, not of the page).
    assert not errors, f"console errors on {path}: {errors}"
    broken = page.evaluate(
        "() => [...document.images].filter(i => !(i.complete && i.naturalWidth > 0))"
        ".map(i => i.src)"
    )
    assert not broken, f"images that did not load: {broken}"
    if path.startswith("en/lessons/"):
        graphs = page.evaluate(
            "() => [...document.querySelectorAll('div.cell_output img')].map("
            "i => [i.alt, getComputedStyle(i).backgroundColor])"
        )
        assert graphs
        # On a light card in both themes: their text is black, their boxes pale.
        light = [all(int(c) >= 200 for c in re.findall(r"\d+", colour)[:3]) for _, colour in graphs]
        assert all(light), f"graphs drawn on a dark background: {graphs}"
    unresolved = [u for u in _internal_links(page) if not _resolves(built.site, server, u)]
    assert not unresolved, f"links on {path} that lead nowhere: {sorted(set(unresolved))}"
    options = {"resultTypes": ["violations"]}
    if path not in CONTRAST_PAGES:
        options["rules"] = {"color-contrast": {"enabled": False}}
    violations = Axe().run(page, options=options).response["violations"]
    serious = [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes'][:3]]}"
        for v in violations
        if v["impact"] in ("serious", "critical")
    ]
    assert not serious, f"axe on {path} ({scheme}):\n" + "\n".join(serious)
    # On a phone: code and graphs may scroll in their boxes, the page may not.
    page.set_viewport_size({"width": PHONE_WIDTH, "height": 800})
    width = page.evaluate("document.documentElement.scrollWidth")
    context.close()
    assert width <= PHONE_WIDTH, f"{path} is {width} px wide on a {PHONE_WIDTH}-px phone"


@pytest.mark.slow
@pytest.mark.parametrize(
    "path",
    [
        f"zh-CN/lessons/{lesson}.html"
        for lesson in CHINESE.lessons()
        if f"zh-CN/lessons/{lesson}.html" not in PAGES
    ],
)
def test_the_other_zh_cn_lessons_fit_a_phone(server, chromium, path):
    """The zh-CN lessons' prose differs from the English (a quoted path, long Latin words)."""
    page = chromium.new_page(viewport={"width": PHONE_WIDTH, "height": 800})
    page.goto(f"{server}/{path}", wait_until="load")
    width = page.evaluate("document.documentElement.scrollWidth")
    page.close()
    assert width <= PHONE_WIDTH, f"{path} is {width} px wide on a {PHONE_WIDTH}-px phone"


def _search_term(title: str) -> str:
    """The longest word of a lesson's title: what a visitor who remembers it types."""
    return max(re.findall(r"[A-Za-z]{4,}", title), key=len).lower()


def _chinese_search_term(title: str) -> str:
    """The longest Chinese word of a title, split as the site's search index splits it."""
    import jieba

    words = [w for w in jieba.cut_for_search(title) if re.fullmatch(r"[\u4e00-\u9fff]{2,}", w)]
    return max(words, key=len)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("edition", "term_of"),
    [(ENGLISH, _search_term), (CHINESE, _chinese_search_term)],
    ids=["en", "zh-CN"],
)
def test_search_finds_each_lesson_by_a_word_of_its_title(built, server, chromium, edition, term_of):
    """In the zh-CN edition, by a Chinese word: Sphinx's Chinese search needs jieba."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page = chromium.new_page()
    missing = {}
    for lesson in edition.lessons():
        title = built.staged(lesson, edition).cells[0].source.splitlines()[0].removeprefix("# ")
        term = term_of(title)
        page.goto(f"{server}/{edition.language}/search.html?q={term}", wait_until="load")
        try:
            page.wait_for_selector("#search-results ul.search li", timeout=15_000)
        except PlaywrightTimeout:  # no result at all: reported with the others
            missing[lesson] = (term, [])
            continue
        found = page.evaluate(
            "() => [...document.querySelectorAll('#search-results ul.search li a')]"
            ".map(a => a.getAttribute('href'))"
        )
        if not any(f"lessons/{lesson}.html" in href for href in found):
            missing[lesson] = (term, found)
    page.close()
    assert not missing, f"search did not find these lessons by a word of their title: {missing}"
