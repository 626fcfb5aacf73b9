"""Sphinx additions for the course's website: math as MathML, and each figure's text alternative.

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


def setup(app: Sphinx) -> dict[str, Any]:
    """Registers the MathML renderer and the images' text alternatives."""
    app.add_config_value("site_figure_alt", FIGURE_ALT, "env", str)
    app.add_html_math_renderer("mathml", (_visit_math, None), (_visit_displaymath, None))
    app.connect("doctree-read", _name_images)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
