"""The sources of an edition's pages: each lesson's notebook as a page shows it, and the home page.

A lesson's page is its executed student notebook with three changes: a "run it yourself"
box after its first cell (the commands, the download, Colab where the repository's
address is known), each exercise's test cell folded with its failure taken out (the page
says what to do instead), and nothing else. The home page is the README's front matter,
its lesson names linked to their pages.
"""

from __future__ import annotations

import copy
import re
import sys
from dataclasses import dataclass
from urllib.parse import urlparse

import nbformat
from nbgrader import utils

from autograder.course import REPO
from autograder.site.editions import Edition

LESSONS = "lessons"  # the folder of lesson pages in an edition's site
DOWNLOADS = "downloads"  # the folder of student notebooks in the staged sources
COLAB = "https://colab.research.google.com/github"
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
_LESSON_NAME = re.compile(r"`(\d\d[a-z]?_[a-z0-9_]+)`")  # `02a_version_counter`, a lesson's part
# What the README says about the site itself (a link to it, how to build it): not on it.
_NOT_ON_THE_SITE = re.compile(r"<!-- not on the site\b.*?<!-- end of not on the site -->", re.S)


@dataclass(frozen=True)
class Repository:
    """Where the course's repository is published, when the build is told (for links).

    Attributes:
        url: Its web address, for example ``https://github.com/owner/name``.
        branch: The branch the site is built from.
    """

    url: str
    branch: str = "main"

    @property
    def is_github(self) -> bool:
        """Whether it is on GitHub (Colab opens notebooks from GitHub only)."""
        return urlparse(self.url).netloc == "github.com"

    def file(self, path: str) -> str:
        """The web address of a file of the repository, e.g. ``docs/site.md#building``."""
        return f"{self.url.rstrip('/')}/blob/{self.branch}/{path}"

    def colab(self, path: str) -> str:
        """The address that opens the repository's notebook at ``path`` in Colab."""
        owner_and_name = urlparse(self.url).path.strip("/").removesuffix(".git")
        return f"{COLAB}/{owner_and_name}/blob/{self.branch}/{path}"

    @property
    def package(self) -> str:
        """What ``pip install`` takes to install the course's package from the repository."""
        return f"git+{self.url.rstrip('/')}"


def lesson_title(notebook: nbformat.NotebookNode, lesson: str) -> str:
    """The notebook's first heading, e.g. ``"01 · Leaf tensors"``; the lesson id without one."""
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return lesson


def lesson_page(
    executed: nbformat.NotebookNode,
    edition: Edition,
    lesson: str,
    repository: Repository | None,
) -> nbformat.NotebookNode:
    """The notebook a lesson's page is made from.

    Args:
        executed: The student notebook with the outputs of its execution.
        edition: Its edition (for the words the box uses).
        lesson: Its id, e.g. ``"01_leaf_tensors"``.
        repository: Where the repository is published, or None (no clone command, no
            Colab link).

    Returns:
        A copy of ``executed`` with the box after its first cell and each graded test cell
        folded, without outputs, and followed by what to do.
    """
    page = copy.deepcopy(executed)
    words = edition.words
    cells = []
    for index, cell in enumerate(page.cells):
        cells.append(cell)
        for output in cell.get("outputs", []):
            _unname_machine(output)
        if index == 0:
            cells.append(nbformat.v4.new_markdown_cell(run_box(edition, lesson, repository)))
        if cell.cell_type == "code" and utils.is_grade(cell):
            # The failure a learner sees before answering says nothing on a web page,
            # and its traceback would name the build's folders.
            cell.outputs = []
            cell.execution_count = None
            tags = cell.metadata.setdefault("tags", [])
            tags += [tag for tag in ("hide-input", "exercise-tests") if tag not in tags]
            note = nbformat.v4.new_markdown_cell(
                f"<p class='exercise-note'>{words.exercise_note}</p>"
            )
            cells.append(note)
    page.cells = cells
    return page


def machine_prefixes() -> dict[str, str]:
    """The build machine's folders an output may name, and what a page says instead.

    A warning's traceback names the file of torch that gave it, under the Python that ran
    the notebook: on a learner's machine that is their own folder. A page says where the
    file is relative to the course's folder, or to the Python's folder.
    """
    prefixes = {f"{REPO}/": "", f"{sys.prefix}/": "<python>/"}
    return dict(sorted(prefixes.items(), key=lambda item: -len(item[0])))  # longest first


def _unname_machine(output: nbformat.NotebookNode) -> None:
    """Replaces the build machine's folders in an output's texts (see :func:`machine_prefixes`)."""

    def unnamed(text: str) -> str:
        for prefix, instead in machine_prefixes().items():
            text = text.replace(prefix, instead)
        return text

    if "text" in output:
        output.text = unnamed(output.text)
    if "traceback" in output:
        output.traceback = [unnamed(line) for line in output.traceback]
    for mime, value in output.get("data", {}).items():
        if mime.startswith("text/") and isinstance(value, str):
            output.data[mime] = unnamed(value)


def run_box(edition: Edition, lesson: str, repository: Repository | None) -> str:
    """The "run it yourself" box of ``lesson``'s page, in MyST Markdown."""
    words = edition.words
    notebook = edition.student_notebook(lesson)
    clone = ""
    if repository is not None:
        folder = repository.url.rstrip("/").removesuffix(".git").rsplit("/", 1)[-1]
        clone = f"git clone {repository.url} && cd {folder}   # {words.clone_comment}\n"
    # path: makes MyST link the file as a download, not as the page of the notebook.
    links = [f"[{words.download}](path:../{DOWNLOADS}/{notebook.name})"]
    colab = ""
    if repository is not None and repository.is_github:
        path = notebook.relative_to(REPO).as_posix()
        links.append(f"[{words.colab}]({repository.colab(path)})")
        colab = "\n\n" + words.colab_note.format(package=repository.package)
    return (
        f"````{{admonition}} {words.run_title}\n"
        ":class: tip run-it-yourself\n\n"
        f"{words.run_intro}\n\n"
        "```sh\n"
        f"{clone}"
        f"make lab     # {words.lab_comment}\n"
        f"make check   # {words.check_comment}\n"
        "```\n\n"
        f"{' · '.join(links)}{colab}\n"
        "````\n"
    )


def home_page(edition: Edition, titles: dict[str, str], repository: Repository | None) -> str:
    """The home page: the README's front matter, lesson names linked, and the lessons' toctree.

    The front matter is the README up to its first ``##`` heading, less what it marks
    ``<!-- not on the site ... -->`` up to ``<!-- end of not on the site -->``.

    Args:
        edition: The edition whose README it is.
        titles: Each lesson's title, by lesson id, in order.
        repository: Where the repository is published: a link to one of its files (the
            README's ``docs/...``) goes there; without it such a link becomes its text.

    Returns:
        The page in MyST Markdown.
    """
    text = edition.readme.read_text(encoding="utf-8")
    front = text.split("\n## ", 1)[0].rstrip() + "\n"
    front = _NOT_ON_THE_SITE.sub("", front)

    def link(match: re.Match[str]) -> str:
        label, target = match.groups()
        if urlparse(target).scheme or target.startswith("#"):
            return match.group(0)
        if repository is None:
            return label
        return f"[{label}]({repository.file(target)})"

    def lesson_link(match: re.Match[str]) -> str:
        lesson = match.group(1)
        if lesson not in titles:
            return match.group(0)
        return f"[{lesson}]({LESSONS}/{lesson}.ipynb)"

    front = _LINK.sub(link, front)
    front = _LESSON_NAME.sub(lesson_link, front)
    entries = "\n".join(f"{LESSONS}/{lesson}" for lesson in titles)
    return (
        f"{front}\n```{{toctree}}\n:caption: {edition.words.lessons}\n:hidden:\n\n{entries}\n```\n"
    )
