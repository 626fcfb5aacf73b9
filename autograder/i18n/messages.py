"""The message catalog: every message the tests, the checks and the grader show a learner.

Its templates are extracted from the code, as ``xgettext`` extracts a program's strings:

* in each graded test cell of ``solutions/``, the message of every ``assert`` and of every
  raised exception, an f-string becoming a template with numbered values
  (``f"{name} is on {seen.device}"`` gives ``{0} is on {1}``, and a comment says which
  expression each number stands for), a string concatenation one template, and a name
  assigned a string in the cell replaced by that string;
* in the helper package, the messages of its ``assert`` statements and of the assertion
  errors it raises, and the explanation of each pitfall (:func:`autograd_pitfalls.explain`);
* the grader's own sentences (:data:`GRADER_TEMPLATES`), the summary lines of ``make
  check`` and of the Validate button among them.

:func:`update` merges them into ``src/autograd_pitfalls/locale/<language>.po`` with Babel,
as for the prose: a changed message's translation becomes fuzzy, a removed one obsolete.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Iterator
from pathlib import Path

import jupytext
from babel.messages.catalog import Catalog

from autograder.course import CODE_STUB, REPO, Course, assignment_ids
from autograder.i18n import catalog as catalogs
from autograder.i18n import markers
from autograder.i18n.catalog import TranslationError

PACKAGE = REPO / "src" / "autograd_pitfalls"
# The helper modules whose assertion messages reach a learner (the linter's and the
# diagnosis's printed reports stay English: docs/i18n.md).
HELPER_MODULES = ("checks.py", "probe.py", "expect.py", "inputs.py", "standin.py")
_VALUE = re.compile(r"(?<!\{)\{\d+\}(?!\})")
# Exceptions whose message is a test's verdict.
_VERDICT_ERRORS = ("AssertionError", "HiddenCheckError", "NotImplementedError")


# Texts the hidden checks put into a message as one of its values (where a run happened, a
# reason taken from a table): each is a template of its own, so that the value is rendered
# in the learner's language inside the translated message (values are translated in turn).
# Only prose, never a value a learner types. tests/test_messages.py checks that each is
# still in the sources.
VALUE_TEMPLATES = (
    "on the CPU",
    "on the GPU stand-in",
    # 06's triage (q4): why each broken script has the cause it has.
    "backward() with no argument needs a loss of one value (section 1, in 06a)",
    "requires_grad_() on the loss makes a new leaf, and the cut that caused the error is still "
    "there (section 2, in 06a)",
    "the state carries the previous batch's freed graph (section 6)",
    "a tensor kept as a plain attribute is not moved by .to() (section 5, in 06a)",
    "backward() adds to .grad, so each step carries every earlier gradient (section 4, in 06a)",
    "a parameter the loss does not use gets no gradient (section 3, in 06a)",
    "sqrt's backward is infinite at 0, and the pow node two steps later turns it into NaN "
    "(section 7)",
    # 04's prediction (q1): why a snippet whose answer is "ok" runs.
    "Its graph reaches a, and no tensor saved by a node this backward() runs through is "
    "changed by a later write",
)


def grader_templates() -> list[str]:
    """The grader's and the learner tools' own sentences, as templates."""
    from autograder.i18n.edition import HELPERS_STAY_ENGLISH
    from autograder.learner import summary, validate_button, verdict, workspace
    from autograder.pipeline import judge
    from autograder.preprocessors.execute import JUDGED_BY_THE_GRADER

    stub = CODE_STUB.split('NotImplementedError("', 1)[1].rsplit('")', 1)[0]
    return [
        stub,
        JUDGED_BY_THE_GRADER + "{0}",
        *judge.MESSAGES,
        *summary.MESSAGES,
        *verdict.MESSAGES,
        *validate_button.MESSAGES,
        *workspace.MESSAGES,
        HELPERS_STAY_ENGLISH,
    ]


class _Template:
    """Builds one template from an expression: literal text kept, anything else numbered."""

    def __init__(self, source: str, names: dict[str, ast.expr]) -> None:
        self.source = source
        self.names = names
        self.values: list[str] = []
        self.literal = False

    def build(self, node: ast.expr, depth: int = 0) -> str:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            self.literal = self.literal or bool(node.value.strip())
            return node.value.replace("{", "{{").replace("}", "}}")
        if isinstance(node, ast.JoinedStr):
            return "".join(self.build(part, depth) for part in node.values)
        if isinstance(node, ast.FormattedValue):
            named = isinstance(node.value, ast.Name) and node.value.id in self.names
            if named and node.conversion == -1 and node.format_spec is None:
                return self.build(node.value, depth)  # f"{where}: ..." with where a string
            return self._value(node.value)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self.build(node.left, depth) + self.build(node.right, depth)
        if isinstance(node, ast.Name) and node.id in self.names and depth < 3:
            return self.build(self.names[node.id], depth + 1)
        return self._value(node)

    def _value(self, node: ast.expr) -> str:
        self.values.append(ast.get_source_segment(self.source, node) or ast.unparse(node))
        return "{" + str(len(self.values) - 1) + "}"


def _string_assignments(tree: ast.AST) -> dict[str, ast.expr]:
    return {
        node.targets[0].id: node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and _is_text(node.value)
    }


def _is_text(node: ast.expr) -> bool:
    """Whether an expression builds a string from literal text (not a number's sum)."""
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    return isinstance(node, ast.BinOp) and (_is_text(node.left) or _is_text(node.right))


def _messages(source: str, tree: ast.AST, every_raise: bool) -> Iterator[tuple[str, str]]:
    """(template, comment) of each assert message and raised message in ``tree``."""
    names = _string_assignments(tree)
    for node in ast.walk(tree):
        message = None
        if isinstance(node, ast.Assert) and node.msg is not None:
            message = node.msg
        elif isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
            called = ast.unparse(node.exc.func).rsplit(".", 1)[-1]
            if every_raise or called in _VERDICT_ERRORS:
                message = node.exc.args[0]
        if message is None:
            continue
        template = _Template(source, names)
        text = template.build(message)
        if template.literal:
            comment = ", ".join(f"{{{n}}} = {value}" for n, value in enumerate(template.values))
            yield text, comment


def extract(course: Course | None = None) -> list[tuple[str, str, str]]:
    """Every message template: (template, where it comes from, what its values are)."""
    course = course or Course.repository()
    found: list[tuple[str, str, str]] = []
    for assignment in assignment_ids(course):
        notebook = jupytext.read(course.solution_file(assignment), fmt="py:percent")
        for cell in notebook.cells:
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
            if cell.cell_type != "code" or not cell.metadata.get("nbgrader", {}).get("grade"):
                continue
            tree = ast.parse(cell.source)
            for text, comment in _messages(cell.source, tree, every_raise=True):
                found.append((text, f"{assignment}:{grade_id}", comment))
    for name in HELPER_MODULES:
        source = (PACKAGE / name).read_text()
        for text, comment in _messages(source, ast.parse(source), every_raise=False):
            found.append((text, f"autograd_pitfalls/{name}", comment))
    from autograd_pitfalls.pitfalls import PITFALLS

    for key, pitfall in PITFALLS.items():
        found.append((pitfall.describe().replace("{", "{{").replace("}", "}}"), key, ""))
    found += [(text, "grader", "") for text in grader_templates()]
    found += [(text, "a value in the hidden checks' messages", "") for text in VALUE_TEMPLATES]
    return found


def catalog_path(language: str) -> Path:
    """``src/autograd_pitfalls/locale/<language>.po``."""
    from autograd_pitfalls.messages import catalog_file

    return catalog_file(language)


def template(language: str) -> Catalog:
    """The catalog of every extracted template, without translations (gettext's ``.pot``)."""
    result = catalogs._new_catalog(language)
    for text, where, comment in extract():
        entry = result.get(text)
        if entry is None:
            entry = result.add(text, locations=[(where, None)], flags=["python-brace-format"])
            if comment:
                entry.auto_comments = [comment]
        elif (where, None) not in entry.locations:
            entry.locations.append((where, None))
    return result


def update(language: str) -> Catalog:
    """Merges the code's current messages into the language's message catalog (written)."""
    path = catalog_path(language)
    found = catalogs.read(path, language)
    previous = {message.id: message.previous_id for message in found if message.previous_id}
    found.update(template(language), update_header_comment=False, update_creation_date=False)
    for message in found:
        if message.fuzzy and not message.previous_id and message.id in previous:
            message.previous_id = previous[message.id]
    path.parent.mkdir(parents=True, exist_ok=True)
    catalogs.write(found, path)
    return found


def untranslated(found: Catalog) -> list[str]:
    """The templates that have no current translation."""
    return [m.id for m in found if m.id and (not m.string or m.fuzzy)]


def numbered(found: Catalog) -> dict[int, str]:
    """The catalog's templates by number (their order in the file, from 1): for markers."""
    return dict(zip(itertools.count(1), (m.id for m in found if m.id), strict=False))


def export(language: str, folder: Path) -> int:
    """Writes ``en.md`` (and the draft ``<language>.md``) of the messages that need work.

    The marker lines are ``@@@ message N @@@``, N the message's number in the catalog;
    each English message is preceded, in ``en.md``, by what its values stand for.
    """
    found = update(language)
    todo = set(untranslated(found))
    entries = {n: text for n, text in numbered(found).items() if text in todo}
    if not entries:
        return 0
    notes = {m.id: "; ".join(m.auto_comments) for m in found if m.id}
    folder.mkdir(parents=True, exist_ok=True)
    english = {n: (f"<!-- {notes[t]} -->\n" if notes[t] else "") + t for n, t in entries.items()}
    draft = {n: found[text].string or text for n, text in entries.items()}
    (folder / "en.md").write_text(markers.render(english, "message"), encoding="utf-8")
    short = language.split("-")[0]
    (folder / f"{short}.md").write_text(markers.render(draft, "message"), encoding="utf-8")
    return len(entries)


def import_(language: str, translated: Path) -> int:
    """Puts a translator's ``@@@ message N @@@`` file into the catalog; returns the count.

    Raises:
        TranslationError: If a translation drops or invents a numbered value.
    """
    found = update(language)
    by_number = numbered(found)
    texts = markers.parse(translated.read_text(encoding="utf-8"), translated.name, "message")
    problems = []
    for number, text in texts.items():
        english = by_number.get(number)
        if english is None:
            problems.append(f"message {number}: not in the catalog")
            continue
        if sorted(set(_VALUE.findall(text))) != sorted(set(_VALUE.findall(english))):
            problems.append(f"message {number}: its values differ from the English's")
            continue
        found[english].string = text
        found[english].flags.discard("fuzzy")
    if problems:
        raise TranslationError("\n".join(problems))
    catalogs.write(found, catalog_path(language))
    return len(texts)
