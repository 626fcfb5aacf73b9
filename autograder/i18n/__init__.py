"""Editions of the course in other languages (zh-CN), built from the same sources.

``catalog``: the translation catalogs of the notebooks' prose (gettext ``.po`` files beside
each source, read and updated with Babel); ``markers``: the plain format translators write
(``@@@ cell N @@@``); ``edition``: a notebook of another edition, made from the English one
and a catalog; ``messages``: the catalog of the messages code prints (tests, hidden checks,
``make check``), extracted from the code. See docs/i18n.md.
"""

# The editions besides English, as BCP 47 tags (folder and file names, `make lab LANG=`).
# Here, not in ``catalog``: every command reads it (``make lab LANG=zh-CN`` sets LANG), and
# ``catalog`` imports Babel and jupytext, a quarter of a second that a grading command
# would spend before its first student.
LANGUAGES = ("zh-CN",)
