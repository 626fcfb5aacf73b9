"""The exercise helpers: what they accept, and failure messages that name the pitfall."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

from autograd_pitfalls import (
    GPU,
    PITFALLS,
    KeptInputs,
    assert_grad_close,
    assert_inputs_left_alone,
    assert_is_leaf,
    assert_version,
    compare,
    devices,
    expect_error,
    expect_warning,
    explain,
    on_gpu,
    to_gpu,
)
from autograd_pitfalls.checks import show_warnings_on_stdout
from autograd_pitfalls.pitfalls import named_in

DEVICES = devices()


def test_devices_lists_cpu_first_and_cuda_when_present():
    assert DEVICES[0] == torch.device("cpu")
    assert (torch.device("cuda") in DEVICES) == torch.cuda.is_available()


@pytest.mark.parametrize("device", DEVICES, ids=str)
def test_assert_is_leaf_accepts_a_parameter(device):
    assert_is_leaf(nn.Parameter(torch.ones(3, device=device)), name="eta")


@pytest.mark.parametrize("device", DEVICES, ids=str)
def test_assert_is_leaf_names_the_rebinding_pitfall(device):
    eta = nn.Parameter(torch.ones(3, device=device))
    eta = eta * 2  # the pitfall: the name now points at a non-leaf
    with pytest.raises(AssertionError, match=r"eta is not a leaf: it has grad_fn=<MulBackward0>"):
        assert_is_leaf(eta, name="eta")
    with pytest.raises(AssertionError, match="rebind a name"):
        assert_is_leaf(eta, name="eta")


def test_assert_is_leaf_rejects_non_tensors_and_leaves_without_grad():
    with pytest.raises(AssertionError, match="should be a tensor, got list"):
        assert_is_leaf([1.0], name="x")
    with pytest.raises(AssertionError, match="does not require grad"):
        assert_is_leaf(torch.ones(2), name="x")
    assert_is_leaf(torch.ones(2), name="x", requires_grad=False)


@pytest.mark.parametrize("device", DEVICES, ids=str)
def test_assert_grad_close_passes_on_a_correct_gradient(device):
    x = torch.tensor([1.0, 2.0], device=device, requires_grad=True)
    (x * x).sum().backward()
    assert_grad_close(x.grad, 2 * x.detach(), name="x.grad")


def test_assert_grad_close_says_when_no_gradient_arrived():
    x = torch.ones(2, requires_grad=True)
    with pytest.raises(AssertionError, match=r"x.grad is None\. Pitfall: no gradient reached"):
        assert_grad_close(x.grad, torch.ones(2), name="x.grad")


@pytest.mark.parametrize("device", DEVICES, ids=str)
def test_assert_grad_close_catches_the_gradient_silenced_with_data(device):
    a = torch.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    out = a.sigmoid()
    out.data.zero_()  # silences the version check: backward uses the zeroed output
    out.sum().backward()
    expected = torch.sigmoid(a.detach()) * (1 - torch.sigmoid(a.detach()))
    with pytest.raises(AssertionError, match=r"a.grad is wrong(.|\n)*silenced an in-place error"):
        assert_grad_close(a.grad, expected, name="a.grad")


def test_assert_grad_close_reports_shape_and_device_mismatch():
    with pytest.raises(AssertionError, match=r"shape \(2,\), expected \(3,\)"):
        assert_grad_close(torch.zeros(2), torch.zeros(3), name="g")
    with pytest.raises(AssertionError, match="should be a tensor"):
        assert_grad_close([0.0], torch.zeros(1), name="g")


@pytest.mark.parametrize("device", DEVICES, ids=str)
def test_assert_version_tells_no_grad_writes_from_data_writes(device):
    seen = nn.Parameter(torch.zeros(3, device=device))
    with torch.no_grad():
        seen.fill_(1.0)
    assert_version(seen, 1, name="w")
    hidden = nn.Parameter(torch.zeros(3, device=device))
    hidden.data.fill_(1.0)
    with pytest.raises(AssertionError, match=r"w\._version is 0(.|\n)*hidden from autograd"):
        assert_version(hidden, 1, name="w")


def test_compare_shows_exact_approximate_and_max_difference():
    line = compare("w.grad", torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.000001]))
    assert "exact: False" in line and "approximate: True" in line and "max diff:" in line


def test_expect_error_prints_the_live_message(capsys):
    w = torch.zeros(2, requires_grad=True)
    with expect_error(RuntimeError, match="is being used in an in-place operation"):
        w.add_(1)
    out = capsys.readouterr().out
    assert out.startswith("RuntimeError: a leaf Variable that requires grad is being used")


def test_expect_error_fails_when_nothing_is_raised():
    with pytest.raises(AssertionError, match="nothing was raised"), expect_error(RuntimeError):
        pass


def test_expect_error_fails_when_the_message_changed():
    with (
        pytest.raises(AssertionError, match="message changed"),
        expect_error(ValueError, match="has been used"),
    ):
        raise ValueError("is being used")


def test_expect_error_lets_other_exceptions_through():
    with pytest.raises(KeyError), expect_error(RuntimeError):
        raise KeyError("x")


def test_every_pitfall_names_its_notebook():
    for key, pitfall in PITFALLS.items():
        assert explain(key).startswith("Pitfall: ")
        assert pitfall.notebook[:2].isdigit()


def test_the_report_reads_pitfall_keys_from_their_markers_only():
    message = "x.grad is None. " + explain("grad-never-reached")
    assert named_in(message) == ["grad-never-reached"]
    assert named_in(explain("wrong-device") + "\n" + explain("not-a-leaf")) == [
        "not-a-leaf",
        "wrong-device",
    ]
    # A student's text that quotes a title names nothing; a wrapped line keeps the marker.
    assert named_in(f"Pitfall: {PITFALLS['not-a-leaf'].title}.") == []
    assert named_in("[no-such-pitfall]") == []


def test_show_warnings_on_stdout_keeps_warnings_off_stderr(capsys):
    original = warnings.showwarning
    try:
        show_warnings_on_stdout()
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            x = torch.ones(2, requires_grad=True) * 2
            _ = x.grad  # PyTorch warns: .grad of a non-leaf
    finally:
        warnings.showwarning = original
    captured = capsys.readouterr()
    assert "UserWarning" in captured.out and "not a leaf" in captured.out
    assert captured.err == ""


def test_expect_warning_prints_the_live_warning_and_yields_them(capsys):
    b = torch.ones(2, requires_grad=True) * 2
    with expect_warning(UserWarning, match="not a leaf") as caught:
        assert b.grad is None
    assert len(caught) == 1
    assert capsys.readouterr().out.startswith("UserWarning: The .grad attribute of a Tensor")


def test_expect_warning_fails_without_a_matching_warning():
    with (
        pytest.raises(AssertionError, match="expected a UserWarning matching 'leaf'"),
        expect_warning(UserWarning, match="leaf"),
    ):
        warnings.warn("something else", UserWarning, stacklevel=1)
    with pytest.raises(AssertionError, match="no warning"), expect_warning():
        pass


def test_expect_warning_shortens_long_warnings(capsys):
    with expect_warning(UserWarning):
        warnings.warn("head\n" + "\n".join(f"line {i}" for i in range(20)), stacklevel=1)
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "UserWarning: head" and printed[1] == "  ..." and len(printed) == 6


def _wrap_clone(values: torch.Tensor) -> nn.Parameter:
    return nn.Parameter(values.clone())


def _buffer_on_cpu(values: torch.Tensor) -> torch.Tensor:
    buffer = torch.zeros(values.shape)  # the device bug: no device=
    return buffer + values


def _through_python_numbers(values: torch.Tensor) -> nn.Parameter:
    return nn.Parameter(torch.tensor(values.tolist()))


def _returns_cpu_copy(values: torch.Tensor) -> torch.Tensor:
    return values.cpu().clone()


def test_to_gpu_keeps_parameters_leaves_values_and_structure():
    leaf = torch.ones(2, requires_grad=True)
    moved = to_gpu({"p": nn.Parameter(torch.ones(3)), "xs": [leaf, leaf * 2], "k": 4})
    assert isinstance(moved["p"], nn.Parameter) and moved["p"].device == GPU
    assert moved["p"].tolist() == [1.0, 1.0, 1.0]
    assert moved["xs"][0].is_leaf and moved["xs"][0].requires_grad
    assert not moved["xs"][1].requires_grad  # a non-leaf arrives detached
    assert moved["k"] == 4
    module = to_gpu(nn.Linear(2, 3))
    assert module.weight.device == GPU and isinstance(module.weight, nn.Parameter)


def test_on_gpu_returns_what_a_device_following_function_returns():
    result = on_gpu(_wrap_clone, torch.ones(3))
    assert isinstance(result, nn.Parameter) and result.device == GPU
    assert result.tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize(
    "function",
    [_buffer_on_cpu, _through_python_numbers, _returns_cpu_copy],
    ids=lambda f: f.__name__,
)
def test_on_gpu_catches_tensors_built_on_the_cpu(function):
    with pytest.raises(AssertionError) as caught:
        on_gpu(function, torch.ones(3))
    message = str(caught.value)
    assert function.__name__ in message
    assert PITFALLS["wrong-device"].title in message


def test_on_gpu_names_the_returned_tensor_on_the_wrong_device():
    def pair(values):
        return values * 2, torch.zeros(1)

    with pytest.raises(AssertionError, match=r"result\[1\] is on cpu"):
        on_gpu(pair, torch.ones(3), name="pair(values)")


def _adds_cpu_in_place(values: torch.Tensor) -> torch.Tensor:
    result = values.clone()
    result += torch.ones(values.shape)  # a GPU refuses it (meta accepted it)
    return result


def _adds_cpu_scalar_and_copies_from_cpu(values: torch.Tensor) -> torch.Tensor:
    result = values.new_zeros(values.shape)
    result[:2] = torch.tensor([1.0, 2.0])  # a copy: fine on a GPU too
    return result * torch.tensor(2.0)  # a 0-dim CPU tensor: fine on a GPU too


def _debugged(values: torch.Tensor) -> torch.Tensor:
    with torch.autograd.detect_anomaly():
        leaf = values.detach().requires_grad_()
        (leaf**2).sum().backward()
    return leaf.grad


def test_on_gpu_catches_an_in_place_op_with_a_cpu_operand():
    # gpu:0 on the stand-in, cuda:0 on a machine with a GPU (the course uses it instead).
    with pytest.raises(AssertionError, match=rf"same device, but found .* {GPU} and cpu"):
        on_gpu(_adds_cpu_in_place, torch.ones(3))


def test_on_gpu_allows_what_a_gpu_allows():
    result = on_gpu(_adds_cpu_scalar_and_copies_from_cpu, torch.ones(3))
    assert result.device == GPU and result.tolist() == [2.0, 4.0, 0.0]


def _reads_values(values: torch.Tensor) -> torch.Tensor:
    # .item(), unique and a boolean mask: correct on a GPU, impossible on meta.
    largest = values.max().item()
    kept = values[values > 0]
    return torch.unique(kept) * largest


def test_on_gpu_runs_answers_that_read_values():
    result = on_gpu(_reads_values, torch.tensor([3.0, -1.0, 3.0, 2.0]))
    assert result.device == GPU and result.tolist() == [6.0, 9.0]


def _writes_cpu_values_by_index(values: torch.Tensor) -> torch.Tensor:
    result = values.clone()
    result[torch.tensor([0, 2])] = torch.zeros(2)  # CPU values: a GPU refuses them
    return result


def _writes_a_cpu_scalar_by_index(values: torch.Tensor) -> torch.Tensor:
    result = values.clone()
    result[torch.tensor([0, 2])] = torch.tensor(0.0)  # a 0-dim value: a GPU moves it
    return result


def test_on_gpu_refuses_cpu_values_written_by_index_but_takes_a_0_dim_one():
    with pytest.raises(AssertionError, match="same device"):
        on_gpu(_writes_cpu_values_by_index, torch.ones(3))
    assert on_gpu(_writes_a_cpu_scalar_by_index, torch.ones(3)).tolist() == [0.0, 1.0, 0.0]


def test_on_gpu_runs_an_answer_left_in_anomaly_mode():
    before = torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # anomaly mode warns that it is on
        assert on_gpu(_debugged, torch.ones(2)).tolist() == [2.0, 2.0]
    assert (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()) == before


def _centred_in_place(x: torch.Tensor) -> torch.Tensor:
    x -= x.mean(0)  # writes into the caller's x
    return x


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (_centred_in_place, "x: its values changed"),
        (lambda x: x.add_(1).sub_(1), "x: it was written in place (version 0 -> 2)"),
        (lambda x: x.resize_(1), "x: its values changed"),
        (lambda x: x.requires_grad_(), "x: requires_grad became True"),
    ],
)
def test_kept_inputs_name_each_tensor_an_answer_changed(answer, said):
    x = torch.tensor([[1.0, 2.0], [3.0, float("nan")]])
    kept = KeptInputs(x=x, other=[torch.ones(2)])
    answer(x)
    assert kept.changes() == [said]
    with pytest.raises(
        AssertionError, match=r"f\(x\) changed what it was handed.*\[changed-input\]"
    ):
        assert_inputs_left_alone(kept.changes(), "f(x)")


def test_kept_inputs_see_a_modules_parameters_and_buffers_and_leave_grads_alone():
    layer = nn.BatchNorm1d(2)
    kept = KeptInputs(layer=layer, x=torch.tensor([float("nan"), 1.0]))
    layer.weight.grad = torch.ones(2)  # a gradient is no change to the input
    assert kept.changes() == []
    layer(torch.randn(4, 2))  # training mode: the running statistics move
    with torch.no_grad():
        layer.bias = nn.Parameter(torch.zeros(2))
    assert kept.changes() == [
        "layer.running_mean: its values changed",
        "layer.running_var: its values changed",
        "layer.num_batches_tracked: its values changed",
        "layer.bias: replaced by another tensor",
    ]
    assert_inputs_left_alone([], "f(layer)")  # nothing changed: no error
