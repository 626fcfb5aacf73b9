"""Sphinx additions for the course's website: math as MathML, figures' text alternatives, languages.

Math: Sphinx's default, MathJax, is a script fetched from a CDN when the page opens: a site
built offline would show raw TeX offline, and the browser test (no network) would log
errors. docutils converts TeX to MathML at build time instead, which browsers draw and
screen readers read, with no script at all.

Figures: myst-nb shows an SVG output as an ``<img>`` whose ``alt`` would be the file's
name. A graph drawn by ``autograd_pitfalls.draw`` names itself (its ``<title>`` and
``aria-label`` say, in words, what it shows, from the output down to the leaves); the
``alt`` text is taken from there. An image that names nothing (a plot) gets the
edition's words for a figure (``site_figure_alt``).
"""

from __future__ import annotations

import html
import logging as pylogging
import re
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.utils.math import latex2mathml
from sphinx.application import Sphinx
from sphinx.util import logging

LOGGER = logging.getLogger(__name__)
# TeX that docutils' converter does not know, and what it does know that means the same.
TEX_ALIASES = {r"\dots": r"\ldots", r"\cdots": r"\cdots"}
_SVG_LABEL = re.compile(r"<svg\b[^>]*?\baria-label=\"([^\"]*)\"")
_SVG_TITLE = re.compile(r"<svg\b[^>]*>\s*<title>([^<]*)</title>")
FIGURE_ALT = "A figure drawn by the cell above"


def tex_to_mathml(tex: str, block: bool) -> str:
    """``tex`` as a MathML element; the TeX itself in ``<code>`` when it cannot be converted.

    Args:
        tex: The formula, without its ``$`` delimiters.
        block: Whether it is displayed on a line of its own.
    """
    for alias, known in TEX_ALIASES.items():
        tex = tex.replace(alias, known)
    try:
        return latex2mathml.tex2mathml(tex, as_block=block)
    except SyntaxError as error:
        LOGGER.warning("formula shown as TeX, MathML conversion failed: %s (%s)", tex, error)
        return f"<code class='math'>{html.escape(tex)}</code>"


def _visit_math(translator: Any, node: nodes.math) -> None:
    translator.body.append(tex_to_mathml(node.astext(), block=False))
    raise nodes.SkipNode


def _visit_displaymath(translator: Any, node: nodes.math_block) -> None:
    translator.body.append(f"<div class='math'>{tex_to_mathml(node.astext(), block=True)}</div>")
    raise nodes.SkipNode


def svg_text_alternative(svg: str) -> str | None:
    """What an SVG says it shows (its ``aria-label``, or its first ``<title>``), or None."""
    found = _SVG_LABEL.search(svg) or _SVG_TITLE.search(svg)
    return html.unescape(found.group(1)) if found else None


def _name_images(app: Sphinx, doctree: nodes.document) -> None:
    """Gives each image of a page without ``alt`` text the one its SVG carries."""
    for image in doctree.findall(nodes.image):
        if image.get("alt"):
            continue
        # myst-nb's outputs are named from the source folder ("/../jupyter_execute/..."),
        # which Sphinx's image collector may already have made relative to it.
        path = Path(app.srcdir, image["uri"].lstrip("/"))
        label = None
        if path.suffix == ".svg" and path.is_file():
            label = svg_text_alternative(path.read_text(encoding="utf-8"))
        image["alt"] = label or app.config.site_figure_alt


def parse_editions(value: str) -> list[tuple[str, str]]:
    """``"en=English|zh-CN=中文"`` as ``[("en", "English"), ("zh-CN", "中文")]``."""
    return [tuple(item.split("=", 1)) for item in value.split("|") if "=" in item]  # type: ignore[misc]


def counterpart(pagename: str, language: str) -> str:
    """The address of page ``pagename`` of the ``language`` edition, relative to the page.

    >>> counterpart("lessons/01_leaf_tensors", "zh-CN")
    '../../zh-CN/lessons/01_leaf_tensors.html'
    >>> counterpart("index", "en")
    '../en/index.html'
    """
    return "../" * (pagename.count("/") + 1) + f"{language}/{pagename}.html"


def _language_links(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    """Gives the page's template its counterparts in the other editions (the switch)."""
    current = app.config.site_language
    links = [
        {
            "code": code,
            "name": name,
            "href": counterpart(pagename, code),
            "current": code == current,
        }
        for code, name in parse_editions(app.config.site_editions)
    ]
    if len(links) < 2:
        links = []  # one edition: nothing to switch to
    context["site_language_links"] = links
    context["site_languages_label"] = app.config.site_languages_label
    alternates = "".join(
        f'<link rel="alternate" hreflang="{link["code"]}" href="{html.escape(link["href"])}">\n'
        for link in links
        if not link["current"]
    )
    context["metatags"] = context.get("metatags", "") + alternates


def _chinese_search() -> type:
    """Sphinx's Chinese search, with the name of the stemmer it really ships.

    Sphinx 9.0.4 stems a Chinese page's Latin words with the English stemmer but writes
    ``window.Stemmer = ChineseStemmer`` into ``language_data.js``, which no script defines:
    search pages then log a ReferenceError and find nothing (sphinx-doc/sphinx#14229,
    fixed by #14416 after the latest release). The class is taken from ``language_name``;
    this one names English's. Drop it when the pinned Sphinx has the fix (the browser test
    of the zh-CN search page fails with the error without it).
    """
    from sphinx.search.zh import SearchChinese

    class SearchChineseWithEnglishStemmer(SearchChinese):
        language_name = "English"

    return SearchChineseWithEnglishStemmer


def setup(app: Sphinx) -> dict[str, Any]:
    """Registers the MathML renderer, the images' text alternatives and the language switch."""
    app.add_config_value("site_figure_alt", FIGURE_ALT, "env", str)
    app.add_config_value("site_language", "en", "html", str)
    app.add_config_value("site_languages_label", "Language", "html", str)
    app.add_config_value("site_editions", "", "html", str)
    app.add_html_math_renderer("mathml", (_visit_math, None), (_visit_displaymath, None))
    app.connect("doctree-read", _name_images)
    app.connect("html-page-context", _language_links)
    app.add_search_language(_chinese_search())
    # jieba (the zh-CN search's word splitter) logs its dictionary's loading as DEBUG lines
    # on stderr, in every build: not news. It sets its level when imported, so after that.
    import jieba

    jieba.setLogLevel(pylogging.WARNING)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
