"""Find what of the solutions, hidden tests or the build machine a built site gives away.

What counts as secret (:func:`secret_lines`): every line between ``### BEGIN SOLUTION`` and
``### END SOLUTION``, or between ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS``
(the judge inside them included), of each ``solutions/*/*.py``, with its whitespace
collapsed, except

- a line that also appears in a student notebook, whole or as part of a line (the learner
  has it anyway: a stub's ``pass``, an import the visible tests share, a lone
  ``return x``, a call the demonstrations make too), and
- a line of fewer than :data:`MIN_TOKENS` tokens (a word, a number, a string or a mark of
  punctuation each), or with fewer than :data:`MIN_CHARACTERS` letters, digits and
  underscores (``)``, ``else:``, ``return doubled``, ``x = 1``): a page's prose and code
  contain such lines by chance, and they give nothing away.

A line with a trailing comment also counts without the comment. One line is public though it
is in a solution (:data:`TAUGHT`): a demonstration prints it. nbgrader's markers
(:data:`MARKERS`) count as they are, and so do the absolute paths of this repository and of
the Python that built the site (an output that names them names the build machine).

Every file of the site is searched (:func:`site_texts`): HTML and SVG as the text a reader
gets (tags taken out, so syntax highlighting that splits a line into ``<span>`` pieces hides
nothing) plus their attribute values; JSON and notebooks as every string in them; any other
text file (JavaScript, the search index, CSS) as it is and with JSON's string escapes read.
"""

from __future__ import annotations

import html
import json
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import nbformat

from autograder.course import REPO

BLOCKS = (
    ("### BEGIN SOLUTION", "### END SOLUTION"),
    ("### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"),
)
MARKERS = (
    "BEGIN SOLUTION",
    "END SOLUTION",
    "BEGIN HIDDEN TESTS",
    "END HIDDEN TESTS",
    "BEGIN JUDGE",
    "END JUDGE",
)
MIN_TOKENS = 3
MIN_CHARACTERS = 6
# Solution lines that a demonstration of the student notebook prints, and where.
TAUGHT = {
    "total_loss += loss.item()": (
        "03b_data_vs_detach, section 6: a demonstration prints the four ways to add a loss "
        "to a total, and which keeps a graph"
    ),
}
BINARY_SUFFIXES = frozenset(
    {".png", ".jpg", ".jpeg", ".gif", ".ico", ".woff", ".woff2", ".ttf", ".eot", ".pdf"}
)
_SPACES = re.compile(r"\s+")
_WORD = re.compile(r"\w+")
# A string, a word or number, or one character of punctuation: a line's tokens, roughly.
_TOKEN = re.compile(r"\"[^\"]*\"|'[^']*'|\w+|[^\w\s]")


def normalise(line: str) -> str:
    """``line`` with its whitespace collapsed to single spaces and stripped."""
    return _SPACES.sub(" ", line).strip()


def _significant(line: str) -> bool:
    """Whether ``line`` says enough to give something away (see the module's docstring)."""
    letters = sum(len(word) for word in _WORD.findall(line))
    return len(_TOKEN.findall(line)) >= MIN_TOKENS and letters >= MIN_CHARACTERS


def _variants(line: str) -> Iterator[str]:
    """The line, and its code without a trailing ``  # comment``."""
    yield line
    code, hash_, _ = line.partition(" # ")
    if hash_ and code.strip():
        yield code.strip()


def secret_block_lines(source: str) -> Iterator[str]:
    """The normalised lines inside the solution and hidden-test blocks of one source."""
    inside = None
    for raw in source.splitlines():
        line = normalise(raw)
        begins = [end for begin, end in BLOCKS if line.endswith(begin)]
        if inside is None and begins:
            inside = begins[0]
        elif inside is not None and line.endswith(inside):
            inside = None
        elif inside is not None and line and not line.startswith("### "):
            yield line


def public_text(notebooks: Iterable[Path]) -> str:
    """Every cell of the student notebooks, one normalised line after the other."""
    return "\n".join(
        normalise(line)
        for path in notebooks
        for cell in nbformat.read(path, as_version=4).cells
        for line in cell.source.splitlines()
    )


def secret_lines(sources: Iterable[Path], notebooks: Iterable[Path]) -> dict[str, str]:
    """The lines no page may contain (see the module's docstring), and where each comes from.

    Args:
        sources: The notebook sources, ``solutions/*/*.py``.
        notebooks: The student notebooks made from them (what learners are given).

    Returns:
        Each secret line, mapped to ``"<source file>:<line number>"`` of its first use.
    """
    public = public_text(notebooks)
    secrets: dict[str, str] = {}
    for source in sources:
        text = source.read_text(encoding="utf-8")
        numbered = {normalise(line): n for n, line in reversed(list(enumerate(text.splitlines())))}
        for line in secret_block_lines(text):
            for variant in _variants(line):
                if variant not in public and variant not in TAUGHT and _significant(variant):
                    secrets.setdefault(variant, f"{source.name}:{numbered.get(line, 0) + 1}")
    return secrets


def machine_paths() -> list[str]:
    """The absolute paths an output must not name: this repository's and this Python's."""
    return sorted({str(REPO), sys.prefix, sys.base_prefix} - {"/", "/usr", "/usr/local"})


class _Text(HTMLParser):
    """Collects the text of an HTML or SVG document and its attribute values."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.attributes: list[str] = []  # apart: between two spans they would split a line

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.attributes.extend(value for _, value in attrs if value)

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def _json_strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _json_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _json_strings(item)


def file_text(path: Path) -> str:
    """What a reader or a program gets from one built file, as text (see the module)."""
    raw = path.read_text(encoding="utf-8", errors="replace")
    suffix = path.suffix.lower()
    if suffix in {".html", ".htm", ".svg", ".xml"}:
        parser = _Text()
        parser.feed(raw)
        parser.close()
        return "\n".join([raw, "".join(parser.parts), *parser.attributes])
    if suffix in {".json", ".ipynb"}:
        try:
            # A notebook's cell source is a list of lines: joined, a line is whole again.
            return raw + "\n" + "".join(_json_strings(json.loads(raw)))
        except json.JSONDecodeError:
            return raw
    unescaped = raw.replace('\\"', '"').replace("\\n", "\n").replace("\\'", "'")
    return raw + "\n" + html.unescape(unescaped)


def site_texts(site: Path) -> Iterator[tuple[Path, str]]:
    """Each file of ``site`` and its text, whitespace collapsed line by line (binaries skipped)."""
    for path in sorted(site.rglob("*")):
        if path.is_file() and path.suffix.lower() not in BINARY_SUFFIXES:
            text = file_text(path)
            yield path, "\n".join(normalise(line) for line in text.splitlines())


@dataclass(frozen=True)
class Leak:
    """One secret found in one built file.

    Attributes:
        file: The file, relative to the site's folder.
        secret: What was found.
        origin: Where the secret comes from (``01a_leaf_tensors.py:212``, ``marker``, ``path``).
    """

    file: str
    secret: str
    origin: str

    def __str__(self) -> str:
        return f"{self.file}: {self.secret!r} (from {self.origin})"


def _inner_words(secret: str) -> set[str]:
    """The words of ``secret`` that any text containing it contains whole.

    The first and last words may be the ends of longer words in the text, so they count only
    where the secret does not start or end with them.
    """
    words = _WORD.findall(secret)
    if secret[:1].isalnum() or secret[:1] == "_":
        words = words[1:]
    if secret[-1:].isalnum() or secret[-1:] == "_":
        words = words[:-1]
    return set(words)


def find_leaks(site: Path, secrets: dict[str, str]) -> list[Leak]:
    """Every secret found in any file of ``site``.

    A file is searched for a secret only when it has each of the secret's inner words
    (:func:`_inner_words`): a secret cannot be in a text without them, and the search
    stays a second for about 1,500 secrets and 180 files.

    Args:
        site: The built site's folder.
        secrets: What to look for, mapped to where it comes from (:func:`secret_lines`,
            :data:`MARKERS`, :func:`machine_paths`).
    """
    needed = {secret: _inner_words(secret) for secret in secrets}
    leaks = []
    for path, text in site_texts(site):
        words = set(_WORD.findall(text))
        leaks += [
            Leak(str(path.relative_to(site)), secret, origin)
            for secret, origin in secrets.items()
            if needed[secret] <= words and secret in text
        ]
    return leaks


def course_secrets(notebooks: Iterable[Path]) -> dict[str, str]:
    """Everything a site of this course must not contain: lines, markers and machine paths.

    Args:
        notebooks: The student notebooks the site shows.
    """
    sources = sorted((REPO / "solutions").glob("*/*.py"))
    secrets = secret_lines(sources, notebooks)
    secrets.update({marker: "nbgrader's marker" for marker in MARKERS})
    secrets.update({path: "a path of the machine that built it" for path in machine_paths()})
    return secrets
