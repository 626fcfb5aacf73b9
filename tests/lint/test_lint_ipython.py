"""``%load_ext autograd_pitfalls.lint`` in a real IPython shell: findings first, cell runs."""

from __future__ import annotations

from IPython.core.interactiveshell import InteractiveShell

from autograd_pitfalls.lint import ipython_extension


def test_findings_are_shown_before_the_cells_own_output(shell, capsys):
    result = shell.run_cell(
        "import torch\nloss = torch.ones(3).sum()\nprint('cell ran')\nvalue = loss.data[0]\n"
    )
    out = capsys.readouterr().out
    assert "line 4, col 9: AGP103 " in out
    assert out.index("AGP103") < out.index("cell ran") < out.index("Traceback")
    assert isinstance(result.error_in_exec, IndexError)  # the live error, unchanged


def test_the_extension_is_registered_once_and_unloads(shell, capsys):
    shell.run_cell("%reload_ext autograd_pitfalls.lint")
    shell.run_cell("import torch\nw = torch.ones(2)\nw.data.add_(1)\n")
    assert capsys.readouterr().out.count("AGP102") == 1
    shell.run_cell("%unload_ext autograd_pitfalls.lint")
    shell.run_cell("w.data.add_(1)\n")
    assert "AGP102" not in capsys.readouterr().out


def test_cells_that_are_not_python_still_run(shell, capsys):
    shell.run_cell("%%capture captured\nprint('inside a cell magic')\n")
    assert "inside a cell magic" in shell.user_ns["captured"].stdout
    result = shell.run_cell("def broken(:\n")
    assert isinstance(result.error_before_exec, SyntaxError)  # Python's own message
    shell.run_cell("%time ran = 1 + 1\nimport torch\nx = torch.ones(1)\nprint(x.data)\n")
    assert shell.user_ns["ran"] == 2
    assert "AGP101" in capsys.readouterr().out


def test_a_failing_linter_never_stops_the_cell(shell, monkeypatch):
    def explode(source):
        raise RuntimeError("linter bug")

    monkeypatch.setattr(ipython_extension, "lint_cell", explode)
    result = shell.run_cell("ran = 'yes'\n")
    assert result.success and shell.user_ns["ran"] == "yes"


def test_lint_cell_is_the_function_a_notebook_calls():
    findings = ipython_extension.lint_cell(
        "%matplotlib inline\nimport torch\nx = torch.autograd.Variable(torch.ones(1))"
    )
    assert [(f.line, f.code, f.pitfall) for f in findings] == [(3, "AGP110", "legacy-variable")]
    assert ipython_extension.lint_cell("def broken(:") == []


def test_cells_run_before_the_extension_was_loaded_count(capsys):
    """An import in an earlier cell, or in the cell that loads the extension, is known.

    Kernels store each cell in the history (``store_history=True``), as notebook 03 runs.
    """
    ip = InteractiveShell.instance()
    try:
        ip.run_cell("import torch", store_history=True)
        ip.run_cell(
            "%load_ext autograd_pitfalls.lint\nfrom torch.autograd import Variable",
            store_history=True,
        )
        capsys.readouterr()
        ip.run_cell("legacy = Variable(torch.ones(3))", store_history=True)
        out = capsys.readouterr().out
        assert "line 1, col 10: AGP110 " in out
        assert "[1]" not in out and "[2]" not in out  # the earlier cells' findings: not again
    finally:
        ip.run_cell("%unload_ext autograd_pitfalls.lint")
        InteractiveShell.clear_instance()
