"""torch-check: what it installs beside the course, and what it reports from a notebook."""

from __future__ import annotations

import textwrap

import pytest

from autograder.authoring.torch_check import (
    FailedCell,
    TorchCheckReport,
    _dependencies,
    failed_cells,
)

DEMO = textwrap.dedent(
    """\
    # %% [markdown]
    # # A demo

    # %%
    import torch
    from autograd_pitfalls import expect_error

    # %%
    assert torch.ones(2).sum() == 3, "this claim no longer holds"

    # %%
    with expect_error(RuntimeError, match="words torch no longer says"):
        torch.ones(2) @ torch.ones(3)

    # %%
    print("fine")
    """
)


def test_the_side_environment_gets_the_courses_pins_but_its_own_torch():
    wanted = _dependencies()
    assert not any(spec.startswith("torch==") for spec in wanted)
    assert "nbgrader==0.9.6" in wanted and "pytest==9.2.0" in wanted
    assert any(spec.startswith("torchviz") for spec in wanted)


@pytest.mark.slow
def test_a_failing_claim_and_a_changed_error_text_are_each_reported_by_cell(tmp_path):
    (tmp_path / "99_demo").mkdir()
    (tmp_path / "99_demo" / "99_demo.py").write_text(DEMO)
    claim, text = failed_cells(["99_demo"], tmp_path)
    assert (claim.cell, claim.error) == (3, "AssertionError: this claim no longer holds")
    assert text.cell == 4 and text.name.startswith("with expect_error(RuntimeError")
    assert "the error's message changed" in text.error and "same number of elements" in text.error


def test_the_report_lists_cells_then_the_package_tests():
    report = TorchCheckReport(
        "9.9.9",
        "9.9.9+cpu",
        [FailedCell("02b_version_counter", 14, "q2-tests", "AssertionError: x\nsecond line")],
        "1 failed, 200 passed in 30.0s",
        ["FAILED tests/test_checks.py::test_x - AssertionError"],
    )
    assert report.format().splitlines() == [
        "torch-check 9.9.9: torch 9.9.9+cpu in its own environment",
        "source notebooks: 1 cells raised",
        "  02b_version_counter cell 14 (q2-tests):",
        "      AssertionError: x",
        "      second line",
        "package tests: 1 failed, 200 passed in 30.0s",
        "  FAILED tests/test_checks.py::test_x - AssertionError",
    ]
