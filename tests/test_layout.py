"""The repository's layout: the README's links, and the sandbox's side of the grader.

The README is the front door: short, and every ``docs/`` page it links to exists.

``autograder/kernel/`` is all of the grader that the sandbox mounts (see
``autograder.sandbox.bwrap.course_sandbox``): if it imported another part of
``autograder``, kernels would fail to start inside bubblewrap, or the pipeline would
have to be mounted where student code can read it.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.course import REPO

KERNEL = REPO / "autograder" / "kernel"
README_MAX_LINES = 150  # a few screens: what the course is, how to start, where to read on
_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _local_links(markdown: str) -> list[str]:
    """The targets of the Markdown links in ``markdown`` that point into the repository."""
    return [target for target in _LINK.findall(markdown) if "://" not in target]


def test_readme_is_short_and_links_the_docs():
    readme = (REPO / "README.md").read_text()
    lines = len(readme.splitlines())
    assert lines < README_MAX_LINES, f"README.md has {lines} lines: move reference to docs/"
    docs = [target for target in _local_links(readme) if target.startswith("docs/")]
    assert docs, "the README links no page of docs/"
    missing = [target for target in _local_links(readme) if not (REPO / target).exists()]
    assert not missing, f"README.md links missing files: {missing}"


def test_docs_pages_link_only_what_exists():
    missing = [
        f"{page.name}: {target}"
        for page in sorted((REPO / "docs").glob("*.md"))
        for target in _local_links(page.read_text())
        if not (page.parent / target).exists()
    ]
    assert not missing, f"docs/ links missing files: {missing}"


def test_the_link_check_finds_a_missing_page():
    text = "[a](docs/grading.md) [b](docs/nope.md#x) [c](https://example.org/x.md)"
    assert _local_links(text) == ["docs/grading.md", "docs/nope.md"]


def _imported_modules(path: Path) -> list[tuple[int, str]]:
    """Every module ``path`` imports, absolute, with its line (relative imports resolved)."""
    package = "autograder.kernel"
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            found.append((node.lineno, module))
            if module == "autograder":  # `from autograder import pipeline`: a package
                found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return found


def _outside_kernel(module: str) -> bool:
    inside = module in ("autograder", "autograder.kernel") or module.startswith(
        "autograder.kernel."
    )
    return module.startswith("autograder") and not inside


@pytest.mark.parametrize("path", sorted(KERNEL.glob("*.py")), ids=lambda path: path.name)
def test_kernel_modules_import_nothing_else_from_autograder(path: Path):
    outside = [
        f"{path.name}:{line}: {module}"
        for line, module in _imported_modules(path)
        if _outside_kernel(module)
    ]
    assert not outside, f"autograder/kernel/ must import only itself: {outside}"


def test_the_import_check_finds_an_import_from_the_pipeline(tmp_path: Path):
    module = tmp_path / "leaky.py"
    module.write_text(
        "import json\n"
        "from autograder.kernel import protocol\n"
        "from autograder import course\n"
        "def late():\n"
        "    from autograder.pipeline.run import grade_class\n"
    )
    outside = [module for _, module in _imported_modules(module) if _outside_kernel(module)]
    assert outside == ["autograder.course", "autograder.pipeline.run"]


def test_importing_the_kernel_side_loads_no_other_grader_module():
    # What the zygote and each kernel import, in a fresh interpreter: the package's
    # __init__ must stay lazy too.
    probe = (
        "import sys, autograder.kernel.server, autograder.kernel.guard, autograder.kernel.fs; "
        "print(sorted(m for m in sys.modules if m.startswith('autograder')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO
    )
    loaded = eval(result.stdout)
    assert [module for module in loaded if _outside_kernel(module)] == []
    assert "autograder.kernel.server" in loaded


def test_reading_a_notebook_in_the_grader_does_not_build_iri_parsers():
    # autograder/__init__.py keeps jsonschema from importing rfc3987_syntax (2.2 s).
    code = (
        "import autograder, nbformat, sys\n"
        "from nbformat import v4\n"
        "nbformat.validate(v4.new_notebook(cells=[v4.new_code_cell('x = 1')]))\n"
        "print('rfc3987_syntax' in sys.modules and sys.modules['rfc3987_syntax'] is not None)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "False"
