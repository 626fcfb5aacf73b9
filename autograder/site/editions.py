"""What one language's website is made of: its notebooks, its home page and its words.

The site is built one edition at a time into ``<out>/<language>/``; the folder above holds
only a page that sends a visitor to the first edition. A second language is one more
:class:`Edition` in :data:`EDITIONS` (its student notebooks, its README, its
:class:`Words`), and the build makes its folder beside the first: every path a page links
to is relative, so an edition's folder is self-contained.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from autograder.course import REPO


@dataclass(frozen=True)
class Words:
    """The words the build adds to an edition's pages (the rest comes from its sources).

    Attributes:
        run_title: The heading of the "run it yourself" box.
        run_intro: What the box says before the commands.
        clone_comment: The comment after ``git clone`` in the box.
        lab_comment: The comment after ``make lab``.
        check_comment: The comment after ``make check``.
        download: The download link's text.
        colab: The Colab link's text.
        colab_note: What the box says about Colab (it lacks the course's package).
        exercise_note: Said where an exercise's test cell would show its result.
        lessons: The heading of the home page's list of lessons.
        figure_alt: The text alternative of an image that does not name itself (a plot).
    """

    run_title: str = "Run it yourself"
    run_intro: str = (
        "This page shows the notebook as you get it, with the outputs of its demonstrations "
        "run on the pinned PyTorch. To answer the exercises, run it on your machine "
        "(Linux or macOS, Python 3.11):"
    )
    clone_comment: str = "the course"
    lab_comment: str = "set up (first time), open JupyterLab on your copy"
    check_comment: str = "grade your answers as the grader does"
    download: str = "Download this notebook (.ipynb)"
    colab: str = "Open in Colab"
    colab_note: str = (
        "In Colab, run `%pip install {package}` in a first cell: the notebooks import the "
        "course's helper package."
    )
    exercise_note: str = (
        "Exercise: complete the function above in your copy, then run this test cell "
        "(it fails with “Exercise not answered yet” until you do)."
    )
    lessons: str = "Lessons"
    figure_alt: str = "A plot drawn by the cell above; the text around it says what it shows"


@dataclass(frozen=True)
class Edition:
    """One language's site.

    Attributes:
        language: Its code (Sphinx's ``language``, the output folder's name), e.g. ``"en"``.
        notebooks: The folder of its student notebooks, ``<id>/<id>.ipynb`` each.
        readme: The README whose front matter (up to its first ``##`` heading) is the home page.
        words: The words the build adds to its pages.
    """

    language: str
    notebooks: Path
    readme: Path
    words: Words = field(default_factory=Words)

    def lessons(self) -> list[str]:
        """The lesson ids of this edition: the student notebooks it has, sorted."""
        return sorted(
            folder.name
            for folder in self.notebooks.iterdir()
            if (folder / f"{folder.name}.ipynb").is_file()
        )

    def student_notebook(self, lesson: str) -> Path:
        """The student notebook of ``lesson`` (what a page shows and its download is)."""
        return self.notebooks / lesson / f"{lesson}.ipynb"


EDITIONS: tuple[Edition, ...] = (
    Edition(language="en", notebooks=REPO / "notebooks", readme=REPO / "README.md"),
)


def edition(language: str) -> Edition:
    """The edition of ``language``.

    Raises:
        KeyError: If no edition has that language; the message lists those that exist.
    """
    for candidate in EDITIONS:
        if candidate.language == language:
            return candidate
    known = ", ".join(e.language for e in EDITIONS)
    raise KeyError(f"no edition in language {language!r} (there is: {known})")
