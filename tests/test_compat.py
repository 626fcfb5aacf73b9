"""The private APIs of torch, nbgrader, nbclient and jupyter_client this project uses.

Each is reached through one compat module (``autograd_pitfalls.compat``,
``autograder.compat``). These tests check them against the installed versions, so that
an upgrade that renames, moves or rewords one fails here, with its name, instead of as
a drawing that misses a stale tensor or a wrong grade.
"""

from __future__ import annotations

import importlib
import inspect
import re

import nbformat
import pytest
import torch
from nbformat import v4

from autograd_pitfalls import compat as torch_compat
from autograd_pitfalls import walk
from autograder import compat
from autograder.course import nbgrader_config

VERSIONS = {
    name: importlib.metadata.version(name)
    for name in ("torch", "nbgrader", "nbclient", "jupyter_client", "nbconvert")
}


_FIRST_TRACK_INPLACE = """
import sys, torch
from autograd_pitfalls import track_inplace
with track_inplace() as log:
    w = torch.ones(3, requires_grad=True)
    h = w * 2
    h.add_(1)
print(len(log.writes), "torch._dynamo" in sys.modules)
import torch._dynamo  # now torch.compile may meet the mode: torch's own wrapper is made
from autograd_pitfalls.track import _RecordWrites
with track_inplace() as log:
    (torch.ones(2) * 2).mul_(3)
raw = _RecordWrites.__dict__["__torch_dispatch__"].__wrapped__
print(len(log.writes), getattr(raw, "__dynamo_disable") is not raw)
"""


def test_a_learners_first_dispatch_mode_does_not_import_dynamo_until_something_else_does():
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-c", _FIRST_TRACK_INPLACE], capture_output=True, text=True, check=True
    )
    # The writes are seen; torch._dynamo (1-2.5 s to import) is not imported for it.
    assert result.stdout.split() == ["1", "False", "1", "True"], result.stderr[-2000:]


def test_a_dispatch_mode_sees_each_aten_op_with_the_arguments_it_writes():
    seen = []

    class Record(torch_compat.TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            written = [
                argument.name
                for argument in torch_compat.op_arguments(func)
                if argument.alias_info is not None and argument.alias_info.is_write
            ]
            seen.append((torch_compat.op_name(func), written))
            return func(*args, **(kwargs or {}))

    x = torch.zeros(3)
    with Record():
        x.add_(1)
        torch.add(x, 1, out=torch.empty(3))
    assert ("add_", ["self"]) in seen, (VERSIONS["torch"], seen)
    assert ("add", ["out"]) in seen, (VERSIONS["torch"], seen)


def test_tree_leaves_flattens_nested_arguments():
    tensor = torch.ones(1)
    assert torch_compat.tree_leaves(((tensor, [2, {"k": 3}]), {"out": 4})) == [tensor, 2, 3, 4]


def test_the_gpu_standin_backend_is_set_up_and_runs_factories_and_backward():
    device = torch_compat.gpu_standin_device()
    assert device == torch.device("gpu", 0) == torch_compat.gpu_standin_device()
    # A factory given the device reaches the kernel registered for the backend.
    from autograd_pitfalls.standin import StandInTensor

    weight = torch.ones(3, device=device, requires_grad=True)
    assert type(weight) is StandInTensor and weight.is_leaf
    # Autograd asks the backend's device guard for streams: it must be there.
    (weight * 2).sum().backward()
    assert weight.grad.device == device and weight.grad.tolist() == [2.0, 2.0, 2.0]


def test_a_wrapper_tensor_has_the_values_metadata_and_no_torch_function_in_the_contexts():
    class Wrapper(torch.Tensor):
        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            raise AssertionError("not called here")

    values = torch.ones(2, 3, dtype=torch.float64).t()
    wrapper = torch_compat.wrapper_tensor(Wrapper, values, torch.device("meta"))
    assert type(wrapper) is Wrapper and wrapper.device.type == "meta"
    assert (wrapper.shape, wrapper.stride(), wrapper.dtype) == (
        values.shape,
        values.stride(),
        values.dtype,
    )
    with torch_compat.disable_torch_function(), torch_compat.disable_torch_function_subclass():
        assert torch._C._is_torch_function_enabled() is False


def test_an_inplace_view_op_changes_a_wrapper_tensors_shape_and_strides():
    class Wrapper(torch.Tensor):
        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            raise AssertionError("not called: the op runs on the metadata only")

    values = torch.ones(2, 3)
    wrapper = torch_compat.wrapper_tensor(Wrapper, values, torch.device("meta"))
    torch_compat.apply_inplace_view(torch.ops.aten.t_.default, (wrapper,), {})
    assert (wrapper.shape, wrapper.stride()) == ((3, 2), (1, 3))
    torch_compat.apply_inplace_view(torch.ops.aten.unsqueeze_.default, (wrapper, 0), {})
    assert wrapper.shape == (1, 3, 2)


def test_optimisers_take_the_foreach_path_for_a_class_that_is_allowed(monkeypatch):
    from torch.optim import optimizer

    class Marked(torch.Tensor):
        pass

    kept = list(optimizer._foreach_supported_types)
    monkeypatch.setattr(optimizer, "_foreach_supported_types", kept)
    # The stand-in's backend is among the devices with foreach kernels; its class is added.
    devices = optimizer._get_foreach_kernels_supported_devices()
    assert "cuda" in devices and torch._C._get_privateuse1_backend_name() in devices
    assert Marked not in optimizer._foreach_supported_types
    torch_compat.allow_foreach_optimizers(Marked)
    torch_compat.allow_foreach_optimizers(Marked)
    assert optimizer._foreach_supported_types.count(Marked) == 1
    assert inspect.signature(optimizer._default_to_fused_or_foreach).parameters.keys() >= {
        "params",
        "differentiable",
    }


def test_in_backward_is_true_only_while_a_backward_pass_runs():
    seen = []
    weight = torch.ones(2, requires_grad=True)
    doubled = weight * 2
    doubled.register_hook(lambda grad: seen.append(torch_compat.in_backward()))
    assert not torch_compat.in_backward()
    doubled.sum().backward()
    assert seen == [True] and not torch_compat.in_backward()


def test_backward_nodes_expose_their_saved_tensors_raw_and_checked():
    a, b = torch.ones(2, requires_grad=True), torch.full((2,), 3.0, requires_grad=True)
    product = a * b
    node = product.grad_fn
    names = dir(node)
    for saved in ("self", "other"):
        assert torch_compat.RAW_SAVED_PREFIX + saved in names, VERSIONS["torch"]
        assert torch_compat.CHECKED_SAVED_PREFIX + saved in names, VERSIONS["torch"]
    raw = getattr(node, torch_compat.RAW_SAVED_PREFIX + "other")
    assert torch.equal(raw.data, b)


def test_torchs_stale_and_freed_messages_are_the_ones_diagnose_reads():
    # diagnose tells stale from freed by torch's words: if a release rewords them, the
    # graph walk reports "unrecognised" (never "fine"), and this test says why.
    w = torch.ones(3, requires_grad=True)
    h = w * 2
    loss = (h * h).sum()
    h.add_(1)
    with pytest.raises(RuntimeError) as stale:
        _ = loss.grad_fn.next_functions[0][0]._saved_self
    assert walk._classify(stale.value)[0] == "stale", str(stale.value)
    assert walk._VERSIONS.search(str(stale.value)), str(stale.value)

    y = (w * w).sum()
    y.backward()
    with pytest.raises(RuntimeError) as freed:
        _ = y.grad_fn.next_functions[0][0]._saved_self
    assert walk._classify(freed.value)[0] == "freed", str(freed.value)


@pytest.mark.parametrize(("path", "method", "parameters"), compat.OVERRIDDEN)
def test_the_private_methods_we_override_still_exist_with_their_parameters(
    path: str, method: str, parameters: tuple[str, ...]
):
    module_name, _, class_name = path.rpartition(".")
    cls = getattr(importlib.import_module(module_name), class_name)
    assert hasattr(cls, method), f"{path}.{method} is gone ({VERSIONS})"
    signature = inspect.signature(getattr(cls, method))
    names = [name for name in signature.parameters if name != "self"]
    assert names[: len(parameters)] == list(parameters), (path, method, names, VERSIONS)
    assert inspect.iscoroutinefunction(getattr(cls, method)), (path, method)


def test_nbgraders_validator_executes_and_finds_changed_locked_cells(tmp_path):
    from nbgrader.validator import Validator

    locked = v4.new_code_cell(
        "x = 1  # edited",
        metadata={
            "nbgrader": {
                "grade_id": "setup",
                "locked": True,
                "solution": False,
                "grade": False,
                "checksum": "0" * 32,  # not the checksum of this source
                "schema_version": 3,
            }
        },
    )
    notebook = v4.new_notebook(cells=[locked, v4.new_code_cell("print(x + 1)")])
    notebook.metadata["kernelspec"] = {"name": "python3", "language": "python"}
    validator = Validator(config=nbgrader_config())
    executed = compat.execute_for_validation(validator, nbformat.from_dict(notebook))
    assert executed.cells[1].outputs[0]["text"] == "2\n", VERSIONS["nbgrader"]
    changed = compat.changed_locked_cells(validator, executed)
    assert [cell.metadata.nbgrader["grade_id"] for cell in changed] == ["setup"]


def test_kernel_client_helpers_exist():
    from jupyter_client.asynchronous import AsyncKernelClient

    for name in ("_async_is_alive", "_handle_kernel_info_reply"):
        assert callable(getattr(AsyncKernelClient, name, None)), (name, VERSIONS)
    assert re.fullmatch(r"\d+\.\d+.*", VERSIONS["jupyter_client"])


def test_the_gradebook_schema_read_in_process_is_the_one_alembic_prints(tmp_path):
    import subprocess

    import nbgrader.api
    from nbgrader.dbutil import _temp_alembic_ini
    from sqlalchemy import text

    from autograder.course import put_interpreter_bin_on_path

    # What nbgrader's own get_alembic_version runs (another test may have patched it).
    put_interpreter_bin_on_path()
    with _temp_alembic_ini("sqlite:///unused.db") as ini:
        output = subprocess.check_output(["alembic", "-c", ini, "heads"], text=True)
    through_alembic = output.split("\n")[0].split(" ")[0]
    compat.read_gradebook_schema_in_process()
    assert nbgrader.api.get_alembic_version() == through_alembic, VERSIONS["nbgrader"]
    # A gradebook made now is stamped with it, as nbgrader stamps one.
    with nbgrader.api.Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}") as gradebook:
        stamped = gradebook.db.execute(text("SELECT version_num FROM alembic_version"))
        assert [row[0] for row in stamped] == [through_alembic]


def _page_with_images() -> nbformat.NotebookNode:
    png = (
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJ"
        "RU5ErkJggg=="
    )
    svg = '<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><rect/></svg>'
    code = v4.new_code_cell("draw(loss)")
    code.outputs = [
        v4.new_output("display_data", data={"image/png": png, "text/plain": "<Figure>"}),
        v4.new_output("display_data", data={"image/svg+xml": svg}),
        v4.new_output(
            "display_data",
            data={"text/html": '<IMG src="a.png"><img alt="kept" src="b.png"/><div class="x">'},
        ),
        v4.new_output("stream", name="stdout", text="<img src=escaped.png> a > b\n"),
        v4.new_output("error", ename="AssertionError", evalue="q1", traceback=["AssertionError"]),
    ]
    return v4.new_notebook(
        cells=[
            v4.new_markdown_cell('An image in prose: <img src="c.png">, and **bold**.'),
            code,
            v4.new_code_cell("x = 1"),
        ]
    )


def test_feedback_exported_without_the_second_parse_is_the_same_document():
    from bs4 import BeautifulSoup
    from nbconvert.exporters import HTMLExporter

    from autograder.pipeline.feedback import FeedbackExporter

    notebook = _page_with_images()
    theirs, _ = HTMLExporter().from_notebook_node(notebook)
    ours, _ = FeedbackExporter().from_notebook_node(notebook)

    def document(html: str) -> str:
        return BeautifulSoup(html, features="html.parser").decode()

    assert document(ours) == document(theirs), VERSIONS["nbconvert"]
    assert ours.count(compat.MISSING_ALT_TEXT) == 4  # prose, figure, and the student's <IMG>
    assert 'tabindex="0"' in ours


def test_nbconvert_still_makes_only_the_accessibility_edits_the_grader_repeats():
    from nbconvert.exporters import HTMLExporter

    source = inspect.getsource(HTMLExporter.from_notebook_node)
    asked = re.findall(r"soup\.select\(\"([^\"]+)\"\)", source)
    assert tuple(asked) == compat.NBCONVERT_ACCESSIBILITY_SELECTORS, VERSIONS["nbconvert"]
    assert source.count("BeautifulSoup(") == 1 and compat.MISSING_ALT_TEXT in source
