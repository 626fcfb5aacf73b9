"""Whole notebooks: cells read in order as one program, in the CLI, ``--fix`` and IPython."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autograd_pitfalls.lint import CellSession, lint_cell
from autograd_pitfalls.lint.cli import main

nbformat = pytest.importorskip("nbformat")


def _notebook(path: Path, *sources: str) -> Path:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_markdown_cell("# A notebook")]
    for number, source in enumerate(sources):
        cell = nbformat.v4.new_code_cell(source)
        cell.id = f"c{number}"
        notebook.cells.append(cell)
    nbformat.write(notebook, path)
    return path


def test_names_imported_in_one_cell_are_known_in_the_next(tmp_path, capsys):
    path = _notebook(
        tmp_path / "nb.ipynb",
        "import torch\nfrom torch.autograd import Variable",
        "x = Variable(torch.ones(3), volatile=True)",
        "criterion = torch.nn.MSELoss()\nerror = criterion(x, x)",
        "print(error.data[0])",
    )
    assert main([str(path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(": ")[0] + " " + line.split(": ")[1].split()[0] for line in lines] == [
        f"{path}:c1:1:5 AGP110",
        f"{path}:c1:1:29 AGP111",
        f"{path}:c3:1:7 AGP103",  # error is a 0-dim loss: the criterion was made in c2
    ]


def test_a_write_into_a_tensor_saved_in_another_cell_is_found_at_its_cell(tmp_path, capsys):
    path = _notebook(
        tmp_path / "saved.ipynb",
        "import torch\nx = torch.tensor([[1.0, 2.0]])\nw1 = torch.ones(2, 1, requires_grad=True)",
        "w2 = torch.ones(1, requires_grad=True)\nd = x @ w1\nf = d @ w2",
        "d[:] = 0",
        "f.backward()",
    )
    assert main([str(path), "--select", "AGP122"]) == 1
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith(f"{path}:c2:1:1: AGP122 ")
    assert "saved it at line 3 of cell c1; backward() at line 1 of cell c3" in line


def test_a_finding_made_when_the_program_ends_names_the_cell_of_its_line(tmp_path, capsys):
    """AGP181 is judged once every cell is read: it must still name the zeroing's cell."""
    path = _notebook(
        tmp_path / "zeroed.ipynb",
        "import torch\nmodel = torch.nn.Linear(2, 1)\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)",
        "model(torch.ones(1, 2)).sum().backward()\noptimizer.zero_grad()\noptimizer.step()",
        "print(model.weight)",
    )
    assert main([str(path), "--select", "AGP181"]) == 1
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith(f"{path}:c1:2:1: AGP181 ")


def test_a_cell_that_does_not_parse_is_named_and_the_others_are_still_read(tmp_path, capsys):
    path = _notebook(
        tmp_path / "broken.ipynb",
        "import torch\nfrom torch.autograd import Variable",
        "def broken(:",
        "y = Variable(torch.ones(1))",
    )
    assert main([str(path)]) == 2
    captured = capsys.readouterr()
    assert "cannot parse" in captured.err and "(cell c1)" in captured.err
    assert f"{path}:c2:1:5: AGP110" in captured.out


def test_fix_uses_the_earlier_cells_and_leaves_cells_with_magics_alone(tmp_path, capsys):
    path = _notebook(
        tmp_path / "fixme.ipynb",
        "import torch\nimport torch.nn.functional as F",
        "%time loss = F.mse_loss(torch.ones(2), torch.zeros(2))\nprint(loss.data[0])",
        "error = F.l1_loss(torch.ones(2), torch.zeros(2))\nprint(error.data[0])",
    )
    assert main([str(path), "--fix"]) == 1  # the cell with a magic keeps its finding
    captured = capsys.readouterr()
    assert f"{path}: fixed 1 finding (AGP103)" in captured.err
    assert f"{path}:c1:2:7: AGP103" in captured.out
    cells = [cell for cell in json.loads(path.read_text())["cells"] if cell["cell_type"] == "code"]
    sources = ["".join(cell["source"]) for cell in cells]
    assert sources[2] == "error = F.l1_loss(torch.ones(2), torch.zeros(2))\nprint(error.item())"
    assert sources[1].endswith("print(loss.data[0])")
    assert nbformat.validate(nbformat.read(path, as_version=4)) is None


def test_a_session_keeps_its_earlier_cells_as_context():
    session = CellSession()
    assert lint_cell("import torch", session, "[1]") == []
    assert lint_cell("from torch.autograd import Variable", session, "[2]") == []
    (finding,) = lint_cell("legacy = Variable(torch.ones(3))", session, "[3]")
    assert (finding.code, finding.cell, finding.line) == ("AGP110", "[3]", 1)
    assert lint_cell("def broken(:", session, "[4]") == []  # state unchanged
    lint_cell("x = torch.ones(1, 2)\nw = torch.ones(2, requires_grad=True)", session, "[5]")
    lint_cell("h = (x @ w).sigmoid()\nloss = h.sum()", session, "[6]")
    assert lint_cell("h.mul_(2)", session, "[7]") == []  # no backward() needs it yet
    (stale,) = lint_cell("loss.backward()", session, "[8]")
    assert (stale.code, stale.cell, stale.line) == ("AGP122", "[7]", 1)


def test_the_extension_reads_names_from_the_sessions_earlier_cells(shell, capsys):
    shell.run_cell("import torch")
    shell.run_cell("from torch.autograd import Variable")
    shell.run_cell("legacy = Variable(torch.ones(3))")
    out = capsys.readouterr().out
    assert "line 1, col 10: AGP110 " in out
    shell.run_cell("w = torch.ones(2, requires_grad=True)\nh = (w * 1).exp()")
    shell.run_cell("h.mul_(2)")
    shell.run_cell("try:\n    h.sum().backward()\nexcept RuntimeError as error:\n    print(error)")
    out = capsys.readouterr().out
    assert "AGP122" in out and "is at version 1; expected version 0" in out
    assert out.index("AGP122") < out.index("is at version 1")  # shown before the cell's run
