"""Sphinx's settings for every edition of the course's website (autograder/site/build.py).

What differs by edition (its language, its title, the repository's address) comes from the
build as ``confoverrides``. The notebooks arrive executed (autograder/site/execute.py):
myst-nb only renders them, it never runs a kernel.
"""

project = "autograd-pitfalls"
author = "the autograd-pitfalls authors"
copyright = "the autograd-pitfalls authors, MIT licence"
language = "en"

extensions = ["myst_nb", "autograder.site.sphinx_ext"]
# The downloads folder holds the student notebooks as files to download, not as pages.
exclude_patterns = ["downloads/**", "**/.ipynb_checkpoints"]

myst_enable_extensions = ["dollarmath", "colon_fence"]
# The outputs come from autograder/site/execute.py's cache; myst-nb renders them as they are.
nb_execution_mode = "off"
# The SVG of a graph is kept as SVG (sharp at any zoom, its text alternative inside).
nb_mime_priority_overrides = [("html", "image/svg+xml", 5)]
# Error output as the learner sees it, without the terminal's colour codes.
nb_render_error_lexer = "ipythontb"

html_theme = "sphinx_book_theme"
html_title = "autograd-pitfalls"
html_static_path = ["_static"]
templates_path = ["_templates"]
html_favicon = "_static/favicon.svg"
# pydata-sphinx-theme's first visit otherwise reads an empty mode and logs a console error.
html_context = {"default_mode": "auto"}
html_css_files = ["site.css"]
# The pages' sources are the executed notebooks: not published (the download link gives
# the student notebook itself), and search reads the pages.
html_copy_source = False
html_show_sourcelink = False
html_last_updated_fmt = None
html_theme_options = {
    "use_download_button": False,  # it would offer the staged page's source
    "use_fullscreen_button": False,
    "use_repository_button": False,  # turned on by the build when the address is known
    "home_page_in_toc": True,
    "show_toc_level": 2,
    "navigation_with_keys": False,
    # The language switch (autograder/site/sphinx_ext.py) before the theme's buttons: in
    # the header of every page, on a phone too (the sidebars fold away there).
    "article_header_end": ["language-switch.html", "article-header-buttons.html"],
}
# MathML (autograder/site/sphinx_ext.py): no MathJax to fetch from a CDN, read by screen readers.
html_math_renderer = "mathml"
suppress_warnings = ["mystnb.unknown_mime_type"]
