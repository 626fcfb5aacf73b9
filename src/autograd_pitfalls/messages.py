"""The course's messages in the learner's language, without a second copy of the code.

The tests, the hidden checks and the grader raise and print their messages in English,
the same code in every edition. A message catalog per language
(``autograd_pitfalls/locale/<language>.po``, gettext format) maps each message *template*
to its translation; placeholders are numbered (``{0} is on {1}, expected it on {2}.``) so
that a translation may put them in another order. The templates are extracted from the
code that raises the messages (``python -m autograder translate messages``).

Where a message is shown, :func:`translate` turns the English text back into its template
and values, and renders the translation with the values (each translated in turn, since
a value may itself be a message: a pitfall's explanation). Text that matches no template
is left as it is. So a message is translated where it is displayed: by the grader, for
the feedback and ``make check`` (the language is in the notebook's metadata), and in a
learner's kernel by :func:`show_errors_in_language` (the language is that of the
notebook the kernel was started for).

Importing this module has no side effects.
"""

from __future__ import annotations

import functools
import json
import os
import re
from pathlib import Path

ENGLISH = "en"
LOCALE = Path(__file__).parent / "locale"
# Set by whoever starts a kernel for a notebook of another edition (the tests, a grader).
LANGUAGE_VARIABLE = "AUTOGRAD_PITFALLS_LANGUAGE"
# jupyter_server starts a notebook's kernel with this set to the notebook's path.
SESSION_VARIABLE = "JPY_SESSION_NAME"
# Where a notebook names its edition: metadata {"autograd_pitfalls": {"language": "zh-CN"}}.
METADATA_KEY = "autograd_pitfalls"
LANGUAGE_KEY = "language"
_PLACEHOLDER = re.compile(r"\{(\d+)\}")
# How deep values are translated in turn (a message in a message in a message).
_DEPTH = 3


def catalog_file(language: str) -> Path:
    """The message catalog of ``language``: ``locale/<language>.po``."""
    return LOCALE / f"{language}.po"


def to_regex(template: str) -> re.Pattern[str]:
    """The pattern of the texts a template gives: its literal parts, any text per value.

    ``{{`` and ``}}`` are literal braces, as in :meth:`str.format`.
    """
    parts = re.split(r"(\{\{|\}\}|\{\d+\})", template)
    pattern, seen = [], set()
    for part in parts:
        if part in ("{{", "}}"):
            pattern.append(re.escape(part[0]))
        elif _PLACEHOLDER.fullmatch(part):
            number = int(part[1:-1])
            if number in seen:  # the same value twice: the same text twice
                pattern.append(f"(?P=v{number})")
            else:
                seen.add(number)
                pattern.append(f"(?P<v{number}>.*?)")
        else:
            pattern.append(re.escape(part))
    return re.compile("".join(pattern), re.S)


def literal_length(template: str) -> int:
    """How much of a template is fixed text: the more, the more specific its pattern."""
    return len(_PLACEHOLDER.sub("", template))


@functools.cache
def _entries(language: str) -> tuple[tuple[re.Pattern[str], str], ...]:
    """The catalog's (pattern, translation) pairs, most specific first."""
    path = catalog_file(language)
    if language == ENGLISH or not path.is_file():
        return ()
    from babel.messages.pofile import read_po  # only where a translation is needed

    with path.open("rb") as handle:
        catalog = read_po(handle)
    found = [
        (message.id, message.string)
        for message in catalog
        if message.id and message.string and not message.fuzzy
    ]
    found.sort(key=lambda pair: -literal_length(pair[0]))
    return tuple((to_regex(english), translated) for english, translated in found)


@functools.cache
def _templates(language: str) -> dict[str, str]:
    return {pattern.pattern: translated for pattern, translated in _entries(language)}


def gettext(template: str, language: str) -> str:
    """The translation of a template (the template itself when it has none)."""
    if language == ENGLISH:
        return template
    return _templates(language).get(to_regex(template).pattern, template)


def format_message(template: str, language: str, *values: object) -> str:
    """``template`` in ``language``, its ``{0}``, ``{1}``... filled with ``values``."""
    return gettext(template, language).format(*values)


def translate(text: str, language: str, depth: int = _DEPTH) -> str:
    """An English message (or several, separated by ``; `` or lines) in ``language``.

    Args:
        text: A message as the code raised it.
        language: The language to show it in; English returns ``text``.
        depth: How deep values are translated in turn.

    Returns:
        The translation, or ``text`` where no template matches it.
    """
    if language == ENGLISH or not text.strip() or depth < 0:
        return text
    entries = _entries(language)
    specific = [entry for entry in entries if not _generic(entry[0].pattern)]
    found = _first_match(specific, text, language, depth)
    if found is not None:
        return found
    for separator in ("\n", "; "):  # several messages: each on its own
        if separator in text:
            return separator.join(
                translate(part, language, depth) for part in text.split(separator)
            )
    generic = [entry for entry in entries if _generic(entry[0].pattern)]
    found = _first_match(generic, text, language, depth)
    return text if found is None else found


def _generic(pattern: str) -> bool:
    """Whether a template is mostly values (``{0}: {1}``): tried after splitting messages."""
    return sum(char.isalpha() for char in re.sub(r"\(\?P[^)]*\)", "", pattern)) < 3


def _first_match(entries, text: str, language: str, depth: int) -> str | None:
    for pattern, translated in entries:
        found = pattern.fullmatch(text)
        if not found:
            continue
        values = {}
        for name, value in found.groupdict().items():
            said = translate(value, language, depth - 1)
            if "; " in value and said == value:
                break  # a value that spans two messages: this template is not the one
            values[int(name[1:])] = said
        else:
            return _fill(translated, values)
    return None


def language_of_metadata(metadata: dict) -> str:
    """The edition a notebook's metadata names (``"en"`` when it names none)."""
    about = metadata.get(METADATA_KEY, {}) if isinstance(metadata, dict) else {}
    language = about.get(LANGUAGE_KEY) if isinstance(about, dict) else None
    return language if isinstance(language, str) and language else ENGLISH


def translate_errors(cell: dict, language: str) -> None:
    """Translates the error outputs of a notebook cell in place (message and traceback)."""
    for output in cell.get("outputs", []):
        if output.get("output_type") != "error" or not output.get("evalue"):
            continue
        english = output["evalue"]
        translated = translate(english, language)
        if translated != english:
            output["evalue"] = translated
            output["traceback"] = [
                line.replace(english, translated) for line in output.get("traceback", [])
            ]


def _fill(template: str, values: dict[int, str]) -> str:
    return _PLACEHOLDER.sub(lambda m: values.get(int(m.group(1)), m.group(0)), template)


def notebook_language() -> str:
    """The language of the notebook this process runs for (``"en"`` when it cannot tell).

    ``$AUTOGRAD_PITFALLS_LANGUAGE`` when set; else the ``autograd_pitfalls.language`` of
    the metadata of the notebook named by ``$JPY_SESSION_NAME`` (JupyterLab's kernels).
    """
    language = os.environ.get(LANGUAGE_VARIABLE)
    if language:
        return language
    path = os.environ.get(SESSION_VARIABLE, "")
    if not path.endswith(".ipynb"):
        return ENGLISH
    try:
        with open(path, encoding="utf-8") as handle:
            return language_of_metadata(json.load(handle).get("metadata", {}))
    except (OSError, ValueError, AttributeError):
        return ENGLISH


def show_errors_in_language(language: str | None = None) -> bool:
    """Makes this IPython kernel show the course's error messages in the notebook's language.

    Called as a kernel starts (the lab's kernel). An ``AssertionError`` (a test) or a
    ``NotImplementedError`` (an exercise not answered yet) is shown with its message
    translated; its traceback is IPython's own. Nothing changes for an English notebook.

    Returns:
        Whether messages will be translated.
    """
    language = language or notebook_language()
    if language == ENGLISH or not _entries(language):
        return False
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        return False

    def handler(shell, kind, error, traceback, tb_offset=None):
        if error.args and isinstance(error.args[0], str):
            error.args = (translate(error.args[0], language), *error.args[1:])
        # IPython leaves the display to a custom handler: shown as any error is.
        shell.showtraceback((kind, error, traceback), tb_offset=tb_offset)
        return []

    shell.set_custom_exc((AssertionError, NotImplementedError), handler)
    return True
