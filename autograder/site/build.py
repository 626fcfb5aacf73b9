"""``make site``: the course as a static website, one folder per edition, checked for leaks.

For each edition (autograder/site/editions.py): execute its student notebooks (or take
them from the cache, autograder/site/execute.py), stage the pages' sources
(autograder/site/pages.py) in ``build/site-work/<language>/src``, render them with Sphinx
(myst-nb, sphinx-book-theme: autograder/site/sphinx/conf.py), and copy the result to
``<out>/<language>/``. Then ``<out>/index.html`` sends a visitor to the first edition, and
every file of ``<out>`` is searched for the solutions, the hidden tests and the build
machine's paths (autograder/site/leaks.py): a leak fails the build.
"""

from __future__ import annotations

import html
import io
import json
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from autograder.atomic import replace_file
from autograder.course import REPO
from autograder.errors import AutograderError
from autograder.site import execute
from autograder.site.editions import EDITIONS, Edition
from autograder.site.leaks import Leak, course_secrets, find_leaks
from autograder.site.pages import (
    DOWNLOADS,
    LESSONS,
    Repository,
    home_page,
    lesson_page,
    lesson_title,
)

SITE = REPO / "build" / "site"
WORK = REPO / "build" / "site-work"
CONF = Path(__file__).resolve().parent / "sphinx"


class SiteError(AutograderError):
    """The site could not be built, or what was built must not be published."""


@dataclass
class BuildReport:
    """What a build made and how long it took.

    Attributes:
        out: The site's folder.
        seconds: The whole build.
        execute_seconds: Executing notebooks (zero when all came from the cache).
        sphinx_seconds: Rendering with Sphinx.
        executed: Notebooks executed in this build.
        cached: Notebooks taken from the cache.
        shared: Translated notebooks shown with another edition's execution (same code).
        files: Files in the site.
        size: Their bytes.
        leaks: What the leak check found (the build raises when any).
    """

    out: Path
    seconds: float = 0.0
    execute_seconds: float = 0.0
    sphinx_seconds: float = 0.0
    executed: int = 0
    cached: int = 0
    shared: int = 0
    files: int = 0
    size: int = 0
    leaks: list[Leak] = field(default_factory=list)

    def summary(self) -> str:
        """One line for the terminal, e.g. ``Site built in 45.1 s (...): 180 files, 6.2 MB``."""
        return (
            f"Site built in {self.seconds:.1f} s (executing {self.executed} notebooks "
            f"{self.execute_seconds:.1f} s, {self.cached} from the cache, {self.shared} "
            f"translations with their original's outputs; Sphinx "
            f"{self.sphinx_seconds:.1f} s): {self.files} files, {self.size / 1e6:.1f} MB "
            f"in {_shown(self.out)}"
        )


def _shown(path: Path) -> str:
    """``path`` relative to the repository when inside it (no machine path in messages)."""
    try:
        return str(path.resolve().relative_to(REPO))
    except ValueError:
        return str(path)


def _write_if_changed(path: Path, content: bytes) -> None:
    """Writes ``content`` unless ``path`` holds it already (Sphinx rebuilds what is newer)."""
    if not (path.is_file() and path.read_bytes() == content):
        replace_file(path, content)


def stage(
    edition: Edition,
    src: Path,
    repository: Repository | None,
    report: BuildReport,
    cache: Path,
) -> None:
    """Writes an edition's page sources into ``src``: home page, lesson pages, downloads."""
    expected: set[Path] = set()
    titles = {}
    for lesson in edition.lessons():
        student = edition.student_notebook(lesson)
        started = time.perf_counter()
        reference = edition.reference_notebook(lesson)
        if reference is None:
            notebook, from_cache = execute.executed(student, cache)
        else:
            notebook, from_cache = execute.executed_like(student, reference, cache)
        if reference is not None and from_cache:
            report.shared += 1
        elif from_cache:
            report.cached += 1
        else:
            report.executed += 1
            report.execute_seconds += time.perf_counter() - started
            print(f"  executed {student.name} in {time.perf_counter() - started:.1f} s", flush=True)
        titles[lesson] = lesson_title(notebook, lesson)
        page = src / LESSONS / f"{lesson}.ipynb"
        _write_if_changed(
            page, nbformat.writes(lesson_page(notebook, edition, lesson, repository)).encode()
        )
        download = src / DOWNLOADS / student.name
        _write_if_changed(download, student.read_bytes())
        expected |= {page, download}
    index = src / "index.md"
    _write_if_changed(index, home_page(edition, titles, repository).encode())
    expected.add(index)
    for path in src.rglob("*"):
        if path.is_file() and path not in expected:
            path.unlink()  # a lesson that no longer exists


def render(
    edition: Edition,
    src: Path,
    html_out: Path,
    doctrees: Path,
    repository: Repository | None,
    editions: Sequence[Edition] = (),
) -> None:
    """Renders the staged sources with Sphinx; any warning fails the build.

    Args:
        edition: The edition rendered.
        src: Its staged sources.
        html_out: Where Sphinx writes the pages.
        doctrees: Sphinx's cache of parsed pages.
        repository: Where the repository is published, or None.
        editions: Every edition of the site (the language switch links to the others).

    Raises:
        SiteError: With Sphinx's warnings, when there are any.
    """
    # Imported here: only the build needs them.
    from sphinx.application import Sphinx
    from sphinx.util.docutils import docutils_namespace

    overrides: dict[str, object] = {
        "language": edition.sphinx_language,
        "site_figure_alt": edition.words.figure_alt,
        "site_language": edition.language,
        "site_languages_label": edition.words.languages,
        # One string (code=name|code=name): confoverrides takes strings most reliably.
        "site_editions": "|".join(f"{e.language}={e.name}" for e in editions),
    }
    if repository is not None:
        overrides |= {
            "html_theme_options.repository_url": repository.url,
            "html_theme_options.repository_branch": repository.branch,
            "html_theme_options.use_repository_button": True,
        }
    status, warnings = io.StringIO(), io.StringIO()
    # Each edition is a Sphinx application of its own in this process: docutils keeps the
    # directives and roles extensions register in globals, which the namespace gives back
    # afterwards (as sphinx-build does), or the next edition's extensions would find them
    # taken and warn.
    with docutils_namespace():
        app = Sphinx(
            srcdir=src,
            confdir=CONF,
            outdir=html_out,
            doctreedir=doctrees,
            buildername="html",
            confoverrides=overrides,
            status=status,
            warning=warnings,
        )
        app.build()
    if warnings.getvalue().strip() or app.statuscode:
        raise SiteError(f"Sphinx warned while building the site:\n{warnings.getvalue()}")


def root_page(editions: Sequence[Edition]) -> str:
    """``index.html`` above the editions: it sends a visitor to the edition of their language.

    A script picks the first edition whose language the browser prefers (``zh-TW`` or
    ``zh`` count for ``zh-CN``: the base language decides); without one, or without
    scripts, the first edition. The page also lists every edition by name.
    """
    first = editions[0].language
    links = "".join(
        f'<li><a href="{e.language}/" hreflang="{e.language}" lang="{e.language}">'
        f"{html.escape(e.name)}</a></li>"
        for e in editions
    )
    codes = json.dumps([e.language for e in editions])
    script = (
        "<script>\n(function () {\n"
        f"  var editions = {codes};\n"
        "  var wanted = navigator.languages || [navigator.language || ''];\n"
        "  var base = function (code) { return code.toLowerCase().split('-')[0]; };\n"
        "  for (var i = 0; i < wanted.length; i++) {\n"
        "    for (var j = 0; j < editions.length; j++) {\n"
        "      if (base(wanted[i]) === base(editions[j])) {\n"
        "        location.replace(editions[j] + '/'); return;\n"
        "      }\n    }\n  }\n"
        "  location.replace(editions[0] + '/');\n})();\n</script>\n"
    )
    return (
        f'<!DOCTYPE html>\n<html lang="{first}">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<noscript><meta http-equiv="refresh" content="0; url={first}/"></noscript>\n'
        f'<link rel="canonical" href="{first}/">\n<title>autograd-pitfalls</title>\n'
        f"{script}</head>\n"
        f"<body>\n<main>\n<h1>autograd-pitfalls</h1>\n<ul>{links}</ul>\n</main>\n</body>\n</html>\n"
    )


def build_site(
    out: Path = SITE,
    repository: Repository | None = None,
    editions: Sequence[Edition] = EDITIONS,
    cache: Path = execute.CACHE,
    work: Path = WORK,
) -> BuildReport:
    """Builds the website of ``editions`` into ``out`` and checks it for leaks.

    Args:
        out: The site's folder (replaced).
        repository: Where the course's repository is published, for the clone command,
            the Colab links and the README's links to its files; None leaves them out.
        editions: The editions to build; the first is where ``out/index.html`` leads.
        cache: The folder of executed notebooks (autograder/site/execute.py).
        work: The folder for staged sources, Sphinx's doctrees and its output.

    Returns:
        The report (:meth:`BuildReport.summary` prints it).

    Raises:
        SiteError: If Sphinx warned, or the site contains a secret (the site is left in
            ``out`` to look at, and must not be published).
        autograder.site.execute.ExecutionError: If a demonstration cell raised.
    """
    started = time.perf_counter()
    report = BuildReport(out=out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for edition in editions:
        folder = work / edition.language
        print(f"Building the {edition.language} edition", flush=True)
        stage(edition, folder / "src", repository, report, cache)
        rendering = time.perf_counter()
        render(edition, folder / "src", folder / "html", folder / "doctrees", repository, editions)
        report.sphinx_seconds += time.perf_counter() - rendering
        shutil.copytree(
            folder / "html",
            out / edition.language,
            ignore=shutil.ignore_patterns(".buildinfo", ".doctrees"),
        )
    (out / "index.html").write_text(root_page(editions), encoding="utf-8")
    (out / ".nojekyll").write_text("")  # GitHub Pages: serve _static/ and _images/ as they are
    notebooks = [
        edition.student_notebook(lesson) for edition in editions for lesson in edition.lessons()
    ]
    report.leaks = find_leaks(out, course_secrets(notebooks))
    files = [path for path in out.rglob("*") if path.is_file()]
    report.files = len(files)
    report.size = sum(path.stat().st_size for path in files)
    report.seconds = time.perf_counter() - started
    if report.leaks:
        shown = "\n".join(f"  {leak}" for leak in report.leaks[:20])
        raise SiteError(
            f"the site in {_shown(out)} gives away {len(report.leaks)} secrets; "
            f"do not publish it:\n{shown}"
        )
    return report
