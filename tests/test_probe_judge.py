"""Hidden checks as probe and judge: the layout of every test cell, and how it is judged."""

from __future__ import annotations

import ast
import re

import jupytext
import pytest
import torch
from nbgrader import utils

from autograd_pitfalls import observations, probe, torch_state
from autograder.course import Course, assignment_ids
from autograder.pipeline import judge as judging

ASSIGNMENTS = assignment_ids()
# Names that would hold an expected value or an oracle: never on the kernel's side.
KNOWING = re.compile(r"expect|truth|reference|oracle|correct|right_answer|solution", re.I)
KERNEL_SIDE_STATEMENTS = (
    ast.FunctionDef,
    ast.ClassDef,
    ast.Import,
    ast.ImportFrom,
)


def _test_cells(assignment: str) -> list[tuple[str, str]]:
    notebook = jupytext.read(Course.repository().solution_file(assignment), fmt="py:percent")
    return [
        (cell.metadata["nbgrader"]["grade_id"], cell.source)
        for cell in notebook.cells
        if cell.cell_type == "code" and utils.is_grade(cell)
    ]


def _kernel_side(hidden: str) -> str:
    return judging._JUDGE_SECTION.sub("", hidden)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_test_cell_is_probe_and_judge(assignment: str):
    for grade_id, source in _test_cells(assignment):
        hidden = judging.hidden_block(source)
        assert hidden, f"{grade_id} has no hidden tests"
        assert judging.judge_sections(source), f"{grade_id} has no ### BEGIN JUDGE section"
        calls = [
            node
            for node in ast.walk(ast.parse(_kernel_side(hidden)))
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "probe_and_judge"
        ]
        assert calls, f"{grade_id}: no probe_and_judge call after the judge"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_no_hidden_test_defines_expected_values_in_the_kernel(assignment: str):
    """The kernel's side of a hidden block: definitions and probe_and_judge calls, no oracle."""
    for grade_id, source in _test_cells(assignment):
        tree = ast.parse(_kernel_side(judging.hidden_block(source)))
        for node in tree.body:
            is_call = (
                isinstance(node, ast.Expr)
                and isinstance(node.value, ast.Call)
                and getattr(node.value.func, "id", "") == "probe_and_judge"
            )
            assert is_call or isinstance(node, KERNEL_SIDE_STATEMENTS), (
                f"{grade_id}: line {node.lineno} of the hidden tests runs in the kernel; "
                "the kernel's side holds only definitions and probe_and_judge calls"
            )
        for node in ast.walk(tree):
            assert not isinstance(node, ast.Assert), (
                f"{grade_id}: an assert at line {node.lineno} of the hidden tests would run "
                "in the student's kernel; judges go between ### BEGIN JUDGE and ### END JUDGE"
            )
            name = getattr(node, "id", None) or getattr(node, "name", None) or ""
            assert not KNOWING.search(str(name)), (
                f"{grade_id}: {name!r} on the kernel's side of the hidden tests"
            )


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_test_cell_starts_from_torchs_defaults(assignment: str):
    """What an earlier cell left (autograd off, a default dtype) must not reach a test."""
    for grade_id, source in _test_cells(assignment):
        body = ast.parse(source).body
        first = body[1] if isinstance(body[0], ast.Expr) else body[0]  # after the docstring
        assert ast.unparse(first) == "reset_torch_settings()", (
            f"{grade_id} should call reset_torch_settings() right after its docstring"
        )


# Answers handed tensors that their exercise asks them to write into, and nothing else.
WRITES_ITS_INPUTS = {("02b_version_counter", "q3")}


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_exercise_handed_tensors_checks_them_after_the_call(assignment: str):
    notebook = jupytext.read(Course.repository().solution_file(assignment), fmt="py:percent")
    tests = dict(_test_cells(assignment))
    for cell in notebook.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        if not grade_id.endswith("-answer"):
            continue
        exercise = grade_id.removesuffix("-answer")
        handed = [
            argument.annotation
            for node in ast.walk(ast.parse(cell.source))
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_")
            for argument in node.args.args
            if argument.annotation is not None
            and re.search(
                r"Tensor|Module|Parameter|CharRNN|TiedRNNLM|list", ast.unparse(argument.annotation)
            )
        ]
        if not handed or (assignment, exercise) in WRITES_ITS_INPUTS:
            continue
        test = tests[f"{exercise}-tests"]
        assert "KeptInputs(" in test and "assert_inputs_left_alone(" in test, (
            f"{assignment} {exercise}: the answer is handed tensors; its probe should record "
            "them with KeptInputs and its judge call assert_inputs_left_alone"
        )


CELL = '''"""Checks double."""
def helper(x):
    return 2 * x
assert True
### BEGIN HIDDEN TESTS
def hidden_cases(rng):
    return [{"x": torch.randn(3, generator=rng, dtype=torch.float64)} for _ in range(3)]


def observe(case):
    return {"y": double(case["x"])}


### BEGIN JUDGE
def judge(seen, case):
    assert torch.allclose(seen["y"].values, helper(case["x"])), "double(x) should be 2 x"


### END JUDGE
probe_and_judge("q1", hidden_cases, observe, judge)
### END HIDDEN TESTS
'''
SETUP = "import torch\nfrom autograd_pitfalls.probe import probe_and_judge\nprint('setup')\n"


def _run_kernel_side(source: str, answer, seed: int) -> list[str]:
    """Runs a cell as the kernel would; returns the observations it sent."""
    sent = []
    namespace = {"double": answer}
    exec(SETUP, namespace)
    original = probe._send
    probe._send = lambda name, text: sent.append(text)
    try:
        exec(judging.kernel_source(source, seed), namespace)
    finally:
        probe._send = original
    return sent


def test_kernel_source_keeps_line_numbers_and_drops_the_judge():
    kernel = judging.kernel_source(CELL, seed=1234)
    assert kernel.count("\n") == CELL.count("\n")
    assert "allclose" not in kernel and "should be 2 x" not in kernel
    assert "judged_by_grader(1234)" in kernel


def test_the_grader_judges_what_the_kernel_sent():
    judges = judging.Judges(SETUP)
    right = _run_kernel_side(CELL, lambda x: x * 2, seed=7)
    wrong = _run_kernel_side(CELL, lambda x: x + 2, seed=7)
    assert judges.judge("q1-tests", CELL, {"q1": right}, seed=7).passed
    verdict = judges.judge("q1-tests", CELL, {"q1": wrong}, seed=7)
    assert not verdict.passed and "double(x) should be 2 x" in verdict.failures[0]


def test_observations_from_another_seed_fail():
    # Values computed for other inputs (another student's, an earlier run's) are wrong here.
    judges = judging.Judges(SETUP)
    sent = _run_kernel_side(CELL, lambda x: x * 2, seed=7)
    assert not judges.judge("q1-tests", CELL, {"q1": sent}, seed=8).passed


@pytest.mark.parametrize(
    ("sent", "message"),
    [
        ({}, "sent no observations"),
        ({"q1": ["{not json"]}, "not valid JSON"),
        ({"q1": ["x" * (observations.MAX_CHARS + 1)]}, "more than"),
        ({"q1": ['{"__dict__": {"check": "q1", "cases": [{"__pickle__": "gASV"}]}}']}, "schema"),
        ({"q1": [{"check": "q1"}]}, "JSON text"),
    ],
)
def test_malformed_observations_fail_with_a_message(sent, message):
    verdict = judging.Judges(SETUP).judge("q1-tests", CELL, sent, seed=7)
    assert not verdict.passed and message in verdict.failures[0]


@pytest.mark.parametrize(
    ("stopped_by", "message"),
    [
        ("NotImplementedError", "not judged: the exercise is not answered yet"),
        ("AssertionError", "not judged: the visible tests above failed first (AssertionError)"),
        ("", "sent no observations"),
    ],
)
def test_a_check_that_saw_nothing_says_why_in_plain_words(stopped_by, message):
    verdict = judging.Judges(SETUP).judge("q1-tests", CELL, {}, seed=7, stopped_by=stopped_by)
    assert not verdict.passed and message in verdict.failures[0]


def test_observations_sent_twice_fail():
    sent = _run_kernel_side(CELL, lambda x: x * 2, seed=7)
    verdict = judging.Judges(SETUP).judge("q1-tests", CELL, {"q1": sent * 2}, seed=7)
    assert "2 times" in verdict.failures[0]


def test_an_answer_that_raises_is_reported_per_case():
    class UnprintableError(Exception):
        def __str__(self):
            raise RuntimeError("no")

    def answer(x):
        raise UnprintableError

    sent = _run_kernel_side(CELL, answer, seed=7)
    verdict = judging.Judges(SETUP).judge("q1-tests", CELL, {"q1": sent}, seed=7)
    assert "the answer raised UnprintableError" in verdict.failures[0]


_LEFT_ON: list = []  # keeps an inference_mode() entered by an answer alive, as its frame would


@pytest.mark.parametrize(
    ("leaves", "said"),
    [
        (lambda: torch.set_grad_enabled(False), "grad mode: on -> off"),
        (lambda: torch.set_default_dtype(torch.float64), "the default dtype"),
        (lambda: torch.autograd.set_detect_anomaly(True), "anomaly mode: off -> on"),
        (lambda: torch.use_deterministic_algorithms(True), "deterministic algorithms"),
        (lambda: torch.set_default_device("meta"), "the default device: cpu -> meta"),
        (
            lambda: (_LEFT_ON.append(torch.inference_mode()), _LEFT_ON[-1].__enter__()),
            "inference mode: off -> on",
        ),
    ],
)
def test_an_answer_that_changes_torchs_settings_fails_its_check_and_they_are_put_back(leaves, said):
    def answer(x):
        leaves()
        return x.detach() * 2

    sent = _run_kernel_side(CELL, answer, seed=7)
    assert torch_state.read() == torch_state.DEFAULTS
    verdict = judging.Judges(SETUP).judge("q1-tests", CELL, {"q1": sent}, seed=7)
    assert said in verdict.failures[0] and "[global-state-changed]" in verdict.failures[0]


def test_a_check_starts_from_torchs_defaults_whatever_the_visible_tests_left():
    def answer(x):
        torch.set_grad_enabled(False)
        return x * 2

    torch.set_grad_enabled(False)  # left by the visible tests' call of the same answer
    try:
        sent = _run_kernel_side(CELL, answer, seed=7)
    finally:
        torch.set_grad_enabled(True)
    verdict = judging.Judges(SETUP).judge("q1-tests", CELL, {"q1": sent}, seed=7)
    assert "grad mode: on -> off" in verdict.failures[0]


def test_a_seed_set_by_an_answer_is_put_back_and_not_judged():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)

    def answer(x):
        torch.manual_seed(0)
        return x * 2

    sent = _run_kernel_side(CELL, answer, seed=7)
    assert torch.equal(torch.rand(3), expected)
    assert judging.Judges(SETUP).judge("q1-tests", CELL, {"q1": sent}, seed=7).passed


def test_plain_mode_runs_probe_and_judge_in_one_process():
    namespace = {"double": lambda x: x * 2}
    exec(SETUP, namespace)
    exec(CELL, namespace)  # passes
    namespace["double"] = lambda x: x * 3
    with pytest.raises(AssertionError, match="double"):
        exec(CELL, namespace)


def test_a_cell_without_probe_and_judge_is_an_authoring_error():
    cell = '"""Checks."""\n### BEGIN HIDDEN TESTS\ndef f():\n    pass\n### END HIDDEN TESTS\n'
    with pytest.raises(judging.JudgeSetupError, match="no probe_and_judge"):
        judging.Judges(SETUP).checks("q9-tests", cell)


def test_seeds_differ_by_student_submission_and_check_and_repeat():
    secret = bytes(32)
    base = ("04", "ana", "digest", "q2-tests")
    seed = judging.seed_for(secret, *base)
    assert seed == judging.seed_for(secret, *base)
    for changed in (("04", "bob", "digest", "q2-tests"), ("04", "ana", "other", "q2-tests"),
                    ("04", "ana", "digest", "q3-tests")):  # fmt: skip
        assert judging.seed_for(secret, *changed) != seed
    assert judging.seed_for(b"another secret", *base) != seed


def test_tensor_observations_round_trip():
    weight = torch.nn.Parameter(torch.tensor([1.0, float("nan"), float("inf")]))
    out = (weight * 2).sum()
    data = observations.decode(observations.loads(observations.dumps(
        {"w": weight, "out": out, "ints": torch.arange(3), "meta": torch.zeros(2, device="meta"),
         "t": (1, "a", None, 2.5, float("-inf")), "obj": object()}
    )))  # fmt: skip
    seen = data["w"]
    assert seen.cls == "Parameter" and seen.is_leaf and seen.requires_grad
    assert seen.dtype == torch.float32 and seen.shape == (3,) and seen.device_type == "cpu"
    assert seen.values[0] == 1 and seen.values[1].isnan() and seen.values[2].isinf()
    assert data["out"].grad_fn == "SumBackward0" and not data["out"].is_leaf
    assert data["ints"].values.dtype == torch.int64 and data["ints"].values.tolist() == [0, 1, 2]
    assert data["meta"].values is None and data["meta"].device == "meta"
    assert data["t"][:4] == [1, "a", None, 2.5] and data["t"][4] == float("-inf")
    assert data["obj"] == observations.ObjectSeen("object")


def test_subclasses_of_str_int_and_float_are_observed_as_their_base_values():
    import enum

    import numpy as np

    class Outcome(str, enum.Enum):  # noqa: UP042 (as learners write it)
        RAISES = "raises"

    class Version(enum.IntEnum):
        TWO = 2

    class Loud(str):
        def __str__(self) -> str:
            raise AssertionError("a subclass's __str__ is not called")

    sent = {Outcome.RAISES: [Outcome.RAISES, Version.TWO, np.float64(0.5), True, Loud("x")]}
    data = observations.decode(observations.loads(observations.dumps(sent)))
    assert data == {"raises": ["raises", 2, 0.5, True, "x"]}
    assert [type(value) for value in data["raises"]] == [str, int, float, bool, str]


def test_numpy_scalars_are_observed_as_python_numbers_and_arrays_are_not():
    import numpy as np

    sent = [np.int64(2), np.uint8(3), np.bool_(True), np.float32(0.5), np.array([1, 2])]
    data = observations.decode(observations.loads(observations.dumps(sent)))
    assert data[:4] == [2, 3, True, 0.5]
    assert [type(value) for value in data[:4]] == [int, int, bool, float]
    assert data[4] == observations.ObjectSeen("ndarray")  # not a scalar: a wrong type


def test_a_dict_cannot_pose_as_a_tensor():
    forged = {"__tensor__": {"cls": "Tensor"}}
    data = observations.decode(observations.loads(observations.dumps(forged)))
    assert data == {"__tensor__": {"cls": "Tensor"}}


def test_a_tensor_record_whose_values_do_not_fit_its_shape_is_refused():
    text = observations.dumps(torch.zeros(2)).replace('"shape":[2]', '"shape":[3]')
    with pytest.raises(observations.ObservationError, match="shape"):
        observations.decode(observations.loads(text))


def test_the_grader_and_the_probes_agree_on_the_observations_type_and_size():
    from autograder.kernel.protocol import OBSERVATIONS_MAX_CHARS, OBSERVATIONS_MIME

    assert probe.MIME == OBSERVATIONS_MIME
    assert observations.MAX_CHARS == OBSERVATIONS_MAX_CHARS
