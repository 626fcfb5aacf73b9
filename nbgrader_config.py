"""nbgrader's configuration for this course (used by the `nbgrader` command and JupyterLab).

The settings live in `autograder.course`, shared with `python -m autograder`.
"""

from autograder.course import REPO, nbgrader_config

c = get_config()  # noqa: F821 (provided by nbgrader when it loads this file)
c.merge(nbgrader_config())
c.CourseDirectory.root = str(REPO)
c.CourseDirectory.source_directory = "build/source"
c.CourseDirectory.release_directory = "notebooks"
