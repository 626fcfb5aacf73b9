"""The course as a static website: ``make site`` (``python -m autograder.site``).

:mod:`~autograder.site.editions` says what each language's site is made of,
:mod:`~autograder.site.execute` runs the student notebooks (with a cache),
:mod:`~autograder.site.pages` makes the pages' sources, :mod:`~autograder.site.build` renders
them with Sphinx, and :mod:`~autograder.site.leaks` checks that no solution, hidden test or
machine path is in what was built. docs/site.md says why it is built this way.
"""
