"""The zh-CN edition: built from the same sources, complete, consistent in its terms.

The zh-CN student notebooks are the English ones with translated prose (see
``autograder/i18n``): these tests check that the code is the same byte for byte, that a
changed or untranslated English cell stops the build and is named, that every translation
keeps what must stay verbatim (code, math, URLs, headings), and the terminology table
``docs/terms.zh-CN.md``.
"""

from __future__ import annotations

import collections
import csv
import html
import re
import shutil
from pathlib import Path

import nbformat
import pytest

from autograd_pitfalls.messages import translate
from autograder.authoring.build import BuildError, build
from autograder.authoring.wrong_answers import FIXTURES
from autograder.course import REPO, Course, assignment_ids
from autograder.i18n import catalog, markers
from autograder.i18n.catalog import LANGUAGES, TranslationError
from autograder.i18n.edition import edition_notebook, language_of
from tests.support.fixtures import (
    edition_folder,
    edition_student_id,
    edition_students,
    fixture_notebooks,
)

ASSIGNMENTS = assignment_ids()
TERMS = REPO / "docs" / "terms.zh-CN.md"


def _translated(assignment: str, language: str = "zh-CN") -> list[tuple[str, str, str]]:
    """(cell id, English, translation) of each entry of an assignment's catalog."""
    path = catalog.catalog_path(Course.repository(), assignment, language)
    return [
        (message.locations[0][0] if message.locations else "?", message.id, message.string)
        for message in catalog.read(path, language)
        if message.id
    ]


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_edition_is_the_english_notebook_with_its_prose_translated(assignment, language):
    """Code cells, ids and nbgrader metadata are the English release's, byte for byte."""
    english = nbformat.read(Course.repository().student_notebook(assignment), as_version=4)
    path = edition_notebook(Course.repository(), assignment, language)
    edition = nbformat.read(path, as_version=4)
    assert language_of(edition) == language and language_of(english) == "en"
    assert len(edition.cells) == len(english.cells)
    translated = 0
    for index, (mine, theirs) in enumerate(zip(edition.cells, english.cells, strict=True)):
        assert (mine.cell_type, mine.id, mine.metadata) == (
            theirs.cell_type,
            theirs.id,
            theirs.metadata,
        ), f"{path.name} cell {index}"
        if mine.cell_type == "code":
            assert mine.source == theirs.source, f"{path.name}: code cell {index} differs"
        else:
            translated += mine.source != theirs.source
    assert translated > 0.9 * sum(cell.cell_type == "markdown" for cell in english.cells)


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_edition_notebook_is_up_to_date(built_course: Course, assignment, language):
    fresh = edition_notebook(built_course, assignment, language).read_bytes()
    committed = edition_notebook(Course.repository(), assignment, language)
    assert committed.read_bytes() == fresh, f"{committed} is stale: run `make notebooks`"


def _course_with_own_sources(tmp_path: Path, assignment: str) -> Course:
    solutions = tmp_path / "solutions"
    shutil.copytree(REPO / "solutions" / assignment, solutions / assignment)
    return Course(tmp_path, solutions, tmp_path / "build" / "source", tmp_path / "release")


def test_a_changed_english_cell_stops_the_build_naming_the_cell(tmp_path):
    assignment = ASSIGNMENTS[0]
    course = _course_with_own_sources(tmp_path, assignment)
    build(course, [assignment], LANGUAGES)  # as committed: every cell translated
    source = course.solution_file(assignment)
    text = source.read_text()
    changed = text.replace("Run the cells from top to bottom.", "Run every cell, top down.", 1)
    assert changed != text
    source.write_text(changed)
    with pytest.raises(BuildError) as stopped:
        build(course, [assignment], LANGUAGES)
    assert f"{assignment}.py" in str(stopped.value)
    assert "cell 0 ('# 01a · Leaf tensors (part 1 of 2)'): not in the catalog" in str(stopped.value)
    # update keeps the old translation as fuzzy, with the English it was made from: still
    # no build, and the cell is named again.
    catalog.update(course, assignment, "zh-CN")
    po = catalog.catalog_path(course, assignment, "zh-CN").read_text()
    assert "#, fuzzy" in po and "#| msgid" in po
    title = r"cell 0 \('# 01a · Leaf tensors \(part 1 of 2\)'\): fuzzy"
    with pytest.raises(TranslationError, match=title):
        catalog.translations(course, assignment, "zh-CN")


def test_the_english_a_fuzzy_translation_was_made_from_survives_updates_unchanged(tmp_path):
    """The previous English (``#| msgid``) reads back exactly, however long and many-lined."""
    assignment = ASSIGNMENTS[0]
    course = _course_with_own_sources(tmp_path, assignment)
    cell = catalog.prose_cells(course, assignment)[1]
    older = (
        "A first line, long enough to be wrapped by any text wrapper at seventy-six columns, "
        'with "quotes", `code spans` and a trailing space \n\nSecond line; a-hyphenated-word.'
    )
    (tmp_path / "en.md").write_text(markers.render({cell.index: older}))
    (tmp_path / "zh.md").write_text(markers.render({cell.index: "旧的译文"}))
    markers.import_(course, assignment, "zh-CN", tmp_path / "zh.md", english=tmp_path / "en.md")
    path = catalog.catalog_path(course, assignment, "zh-CN")
    for _ in range(3):  # each update reads the catalog back and writes it again
        catalog.update(course, assignment, "zh-CN")
        found = catalog.read(path, "zh-CN").get(cell.source)
        assert found.fuzzy and found.previous_id == [older]
        assert found.string == "旧的译文"


def test_a_new_english_cell_without_translation_stops_the_build(tmp_path):
    assignment = ASSIGNMENTS[0]
    course = _course_with_own_sources(tmp_path, assignment)
    source = course.solution_file(assignment)
    source.write_text(source.read_text() + "\n# %% [markdown]\n# A new closing remark.\n")
    catalog.update(course, assignment, "zh-CN")
    with pytest.raises(TranslationError, match=r"\('A new closing remark.'\): not translated"):
        catalog.translations(course, assignment, "zh-CN")


def test_import_takes_a_translators_file_and_marks_cells_whose_english_changed(tmp_path):
    assignment = ASSIGNMENTS[0]
    course = _course_with_own_sources(tmp_path, assignment)
    cells = catalog.prose_cells(course, assignment)
    first, second = cells[0], cells[1]
    english = {first.index: first.source, second.index: "An older English text."}
    (tmp_path / "en.md").write_text(markers.render(english))
    (tmp_path / "zh.md").write_text(markers.render({first.index: "一", second.index: "二"}))
    done = markers.import_(
        course, assignment, "zh-CN", tmp_path / "zh.md", english=tmp_path / "en.md"
    )
    assert (done.translated, done.fuzzy) == ([first.index], [second.index])
    found = catalog.read(catalog.catalog_path(course, assignment, "zh-CN"), "zh-CN")
    assert found.get(first.source).string == "一" and not found.get(first.source).fuzzy
    assert found.get(second.source).fuzzy
    assert found.get(second.source).previous_id == ["An older English text."]
    # export hands back exactly what still needs work (the rest was translated already),
    # with the translation to revise and the English it was made from
    out = tmp_path / "out"
    assert markers.export(course, assignment, "zh-CN", out) == 1
    assert markers.parse((out / "en.md").read_text()) == {second.index: second.source}
    assert markers.parse((out / "zh.md").read_text()) == {second.index: "二"}
    assert markers.parse((out / "previous.md").read_text()) == {
        second.index: "An older English text."
    }


def test_catalogs_hold_no_leftovers():
    """Every catalog entry is a current cell: no obsolete or fuzzy entry is committed."""
    for assignment in ASSIGNMENTS:
        for language in LANGUAGES:
            path = catalog.catalog_path(Course.repository(), assignment, language)
            found = catalog.read(path, language)
            assert not found.obsolete, f"{path.name}: obsolete entries"
            assert not [m.id for m in found if m.id and m.fuzzy], f"{path.name}: fuzzy entries"


def _verbatim(text: str) -> dict[str, collections.Counter]:
    """What a translation keeps as it is: code, math, URLs, and the heading levels."""
    fence = re.compile(r"^```.*?^```", re.S | re.M)
    rest = fence.sub("", text)
    code = re.findall(r"`[^`\n]+`", rest)
    rest = re.sub(r"`[^`\n]+`", "", rest)
    return {
        "code block": collections.Counter(fence.findall(text)),
        "inline code": collections.Counter(code),
        "math": collections.Counter(re.findall(r"\$\$.*?\$\$|\$[^$\n]+\$", rest, re.S)),
        "url": collections.Counter(re.findall(r"https?://[^\s)>\]]+", rest)),
        "heading levels": collections.Counter(re.findall(r"^(#+) ", fence.sub("", text), re.M)),
    }


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_translations_keep_code_math_urls_and_headings(assignment):
    problems = []
    for cell, english, translation in _translated(assignment):
        mine, theirs = _verbatim(translation), _verbatim(english)
        problems += [
            f"{cell}: {kind}: lost {list((theirs[kind] - mine[kind]).elements())}, "
            f"added {list((mine[kind] - theirs[kind]).elements())}"
            for kind in theirs
            if mine[kind] != theirs[kind]
        ]
    assert not problems, "\n".join(problems)


def test_the_verbatim_check_finds_a_translated_code_span():
    kept = _verbatim("用 `x.grad` 读 $a$")
    assert kept == _verbatim("read `x.grad` and $a$")
    assert kept != _verbatim("读 `x.梯度` 和 $a$")


def unrendered_emphasis(markdown: str) -> list[str]:
    """The pieces of text of a markdown cell where ``**``, ``__`` or ``*`` would show as marks.

    CommonMark (which JupyterLab's renderer and the site's follow) closes ``**`` only where
    the flanking rules allow: ``**勘误：**这`` stays literal, the closing ``**`` being preceded
    by punctuation and followed by a letter. Text outside code spans and backslash escapes
    (``\\*\\*2``, kept apart by ``text_join`` disabled) keeps no marker.
    """
    from markdown_it import MarkdownIt  # the site's parser (myst-nb); imported when used

    problems = []
    parser = MarkdownIt("commonmark").enable("table").disable("text_join")
    for token in parser.parse(markdown):
        for child in token.children or []:
            if child.type == "text" and re.search(r"\*\*|__|(?<![\w\\])\*(?=\S)", child.content):
                problems.append(child.content)
    return problems


@pytest.mark.parametrize("language", ["en", *LANGUAGES])
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_emphasis_of_the_prose_renders(assignment, language):
    course = Course.repository()
    path = (
        edition_notebook(course, assignment, language)
        if language != "en"
        else course.student_notebook(assignment)
    )
    notebook = nbformat.read(path, as_version=4)
    problems = [
        f"cell {cell.get('id')}: {text!r}"
        for cell in notebook.cells
        if cell.cell_type == "markdown"
        for text in unrendered_emphasis(cell.source)
    ]
    assert not problems, "\n".join(problems)


def test_the_emphasis_check_finds_a_bold_mark_closed_after_a_fullwidth_colon():
    assert unrendered_emphasis("**勘误：**这个例子错了。")
    assert not unrendered_emphasis("**勘误**：这个例子错了。")
    assert not unrendered_emphasis("**勘误：** 这个例子错了，`a ** 2` 不算。")
    assert not unrendered_emphasis(r"**entry from entry, \*\*2**: refused")


# --- the terminology table ---------------------------------------------------------------


def terms(path: Path = TERMS) -> list[tuple[list[str], list[str], list[str]]]:
    """Rows of the table: (English terms, accepted renderings, rejected renderings)."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        columns = [column.strip() for column in line.strip().strip("|").split("|")]
        if len(columns) != 4 or columns[0] in ("English", "---"):
            continue

        def split(text: str, separator: str) -> list[str]:
            return [
                re.sub(r"\(.*?\)|（.*?）", "", part).strip()
                for part in text.split(separator)
                if re.sub(r"\(.*?\)|（.*?）", "", part).strip()
            ]

        rows.append((split(columns[0], "/"), split(columns[1], "/"), split(columns[2], ",")))
    return rows


def _english_prose(text: str) -> str:
    """A cell's English without what stays verbatim, and without the class ``Parameter``."""
    text = re.sub(r"^```.*?^```", " ", text, flags=re.S | re.M)
    text = re.sub(r"`[^`\n]*`|\$\$.*?\$\$|\$[^$\n]+\$", " ", text, flags=re.S)
    text = re.sub(r"https?://[^\s)>\]]+", " ", text)
    text = re.sub(r'"[^"\n]*"', " ", text)  # quotations: the posts' or PyTorch's own words
    return re.sub(r"\bParameters?\b", " ", text)


def term_problems(entries: list[tuple[str, str, str]], table) -> list[str]:
    """Where a translation misses a term's rendering or uses a rejected one."""
    by_length = sorted(
        ((term, accepted) for english, accepted, _ in table for term in english),
        key=lambda pair: -len(pair[0]),
    )
    rejected = [word for _, _, words in table for word in words]
    problems = []
    for where, english, translation in entries:
        prose = _english_prose(english)
        for term, accepted in by_length:
            pattern = re.compile(rf"\b{re.escape(term)}(?:s|es)?\b", re.I)
            if pattern.search(prose):
                if not any(word in translation for word in accepted):
                    problems.append(f"{where}: {term!r} without {' or '.join(accepted)}")
                prose = pattern.sub(" ", prose)  # a longer term took it: not also a shorter
        problems += [f"{where}: rejected {word!r}" for word in rejected if word in translation]
    return problems


def test_terminology_table_is_followed_by_every_translation():
    table = terms()
    assert len(table) >= 30
    entries = [
        (f"{assignment} {cell}", english, translation)
        for assignment in ASSIGNMENTS
        for cell, english, translation in _translated(assignment)
    ]
    problems = term_problems(entries, table)
    assert not problems, "\n".join(problems)


def test_terminology_check_finds_a_missing_and_a_rejected_rendering():
    table = terms()
    good = ("a", "A leaf tensor keeps its `.grad`.", "叶子张量保留它的 `.grad`。")
    missing = ("b", "An in-place operation on a leaf.", "对叶子张量的就地修改。")
    rejected = ("c", "The tensor is a leaf.", "这个张量是叶张量。")
    assert term_problems([good], table) == []
    assert term_problems([missing], table) == ["b: 'in-place operation' without 原地操作"]
    assert "c: rejected '叶张量'" in term_problems([rejected], table)


# --- the zh-CN fixtures, graded with the class -------------------------------------------


def _expected(assignment: str) -> dict[str, dict[str, str]]:
    with (FIXTURES / assignment / "expected_scores.csv").open() as handle:
        return {row["student_id"]: row for row in csv.DictReader(handle)}


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_each_edition_has_perfect_blank_and_three_wrong_fixtures(built_course, assignment):
    for language in LANGUAGES:
        students = edition_students(assignment)
        assert students[:2] == ["perfect", "blank"] and len(students) >= 5
        notebooks = fixture_notebooks(
            built_course,
            assignment,
            student_notebook=edition_notebook(built_course, assignment, language),
        )
        for student in students:
            committed = edition_folder(assignment, language) / student / f"{assignment}.ipynb"
            assert committed.is_file(), f"{committed} is missing: run `make fixtures`"
            notebook = nbformat.read(committed, as_version=4)
            assert notebook == notebooks[student], f"{committed} is stale: run `make fixtures`"
            assert language_of(notebook) == language


@pytest.mark.slow
@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_edition_fixtures_get_the_scores_of_their_english_twins(graded, assignment, language):
    rows = {row["student_id"]: row for row in graded[assignment].rows}
    expected = _expected(assignment)
    for student in edition_students(assignment):
        row = rows[edition_student_id(language, student)]
        got = {column: row[column] for column in expected[student] if column != "student_id"}
        want = {column: value for column, value in expected[student].items() if column in got}
        assert {k: float(v) for k, v in got.items()} == {k: float(v) for k, v in want.items()}, (
            f"{assignment}/{language}/{student}: {row['message']}"
        )
        assert row["status"] == "ok", f"{student}: {row['message']}"


CHINESE = re.compile(r"[\u4e00-\u9fff]")


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_edition_feedback_is_in_the_learners_language(built_course, graded, assignment):
    """The zh-CN feedback: Chinese prose, and the grader's and tests' messages in Chinese."""
    folder = built_course.root / "feedback"
    student = edition_student_id("zh-CN", "blank")
    page = html.unescape((folder / student / assignment / f"{assignment}.html").read_text())
    assert len(CHINESE.findall(page)) > 1000  # the prose
    first = re.search(
        r'"grade_id": "(q\d+)-answer"', built_course.solution_file(assignment).read_text()
    )
    said = f"{first.group(1)}: not judged: the exercise is not answered yet"
    not_answered = translate(said, "zh-CN")
    assert CHINESE.search(not_answered) and not_answered in page
    assert "not judged: the exercise is not answered yet" not in page
    for student in edition_students(assignment)[2:]:
        page = folder / edition_student_id("zh-CN", student) / assignment / f"{assignment}.html"
        text = html.unescape(page.read_text())
        errors = re.findall(r"AssertionError: ([^\n<]+)", text)
        assert errors, f"{student}: no failing test in its feedback"
        assert any(CHINESE.search(error) for error in errors), f"{student}: {errors[:3]}"
