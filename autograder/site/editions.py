"""What one language's website is made of: its notebooks, its home page and its words.

The site is built one edition at a time into ``<out>/<language>/``; the folder above holds
only a page that sends a visitor to the edition of their browser's language. Each edition
is an :class:`Edition` in :data:`EDITIONS` (its student notebooks, its README, its
:class:`Words`), and the build makes its folder beside the others: every path a page links
to is relative, and every page links to the same page of the other editions (the same
lesson ids, the same page names), which is the language switch.
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
    languages: str = "Language"


CHINESE = Words(
    run_title="自己动手运行",
    run_intro=(
        "本页显示的是你拿到的笔记本，其中演示单元格的输出由固定版本的 PyTorch 运行得到。"
        "要完成练习，请在自己的机器上运行（Linux 或 macOS，Python 3.11）："
    ),
    clone_comment="下载课程",
    lab_comment="安装环境（第一次），以中文界面打开 JupyterLab",
    check_comment="像评分器一样给你的答案评分",
    download="下载这个笔记本（.ipynb）",
    colab="在 Colab 中打开",
    colab_note=(
        "在 Colab 中，先在第一个单元格运行 `%pip install {package}`：笔记本会导入课程的辅助包。"
    ),
    exercise_note=(
        "练习：在你的副本中补全上面的函数，然后运行这个测试单元格"
        "（作答之前，它会以“练习尚未作答”失败）。"
    ),
    lessons="课程",
    figure_alt="上面的单元格画出的图；周围的文字说明它展示了什么",
    languages="语言",
)


@dataclass(frozen=True)
class Edition:
    """One language's site.

    Attributes:
        language: Its code as the web writes it (BCP 47: the output folder's name, the
            pages' ``lang``), e.g. ``"en"``, ``"zh-CN"``.
        name: The language's name in that language, as the switch shows it.
        notebooks: The folder of its student notebooks, ``<id>/<id>.ipynb`` each.
        readme: The README whose front matter (up to its first ``##`` heading) is the home page.
        words: The words the build adds to its pages.
        outputs_from: The language of the edition whose executions its pages show, or
            None to execute its own notebooks. A translated edition's code cells are the
            English ones byte for byte, so their outputs are the same and are not run
            twice (autograder/site/execute.py checks the code before it reuses them).
    """

    language: str
    name: str
    notebooks: Path
    readme: Path
    words: Words = field(default_factory=Words)
    outputs_from: str | None = None

    @property
    def sphinx_language(self) -> str:
        """The code Sphinx takes (a locale name: ``zh_CN``; it writes ``lang="zh-CN"``).

        Sphinx picks its interface strings and its search's word splitter by it, and knows
        Chinese by ``zh_CN``, not by the web's ``zh-CN``.
        """
        return self.language.replace("-", "_")

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

    def reference_notebook(self, lesson: str) -> Path | None:
        """The notebook whose execution ``lesson``'s page shows, when not its own.

        Returns:
            The same lesson's student notebook in the :attr:`outputs_from` edition, or
            None when this edition executes its own (or that edition lacks the lesson).
        """
        if self.outputs_from is None:
            return None
        reference = edition(self.outputs_from).student_notebook(lesson)
        return reference if reference.is_file() else None


EDITIONS: tuple[Edition, ...] = (
    Edition(language="en", name="English", notebooks=REPO / "notebooks", readme=REPO / "README.md"),
    Edition(
        language="zh-CN",
        name="中文",
        notebooks=REPO / "notebooks" / "zh-CN",
        readme=REPO / "README.zh-CN.md",
        words=CHINESE,
        outputs_from="en",
    ),
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
