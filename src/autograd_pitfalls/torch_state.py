"""PyTorch's settings for the whole process: read, compared and put back around the tests.

An answer that calls ``torch.set_grad_enabled(False)`` (or sets the default dtype or
device, turns anomaly mode or deterministic algorithms on, enters inference mode, or seeds
the default generator) and leaves it so changes every later line in the kernel, the next
exercise's tests included. Two things keep that within its own exercise:

- :func:`reset_torch_settings`, at the top of every test cell, puts torch's defaults back
  and reseeds the default generator, so no exercise's tests run with what an earlier cell
  left;
- a hidden check's probe (:mod:`autograd_pitfalls.probe`) reads the settings before and
  after each case, sends what the answer changed to the judge, which fails that check
  (:func:`changes`), and puts them back. The generator is put back, not judged: seeding it
  is no mistake.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, fields

import torch

from autograd_pitfalls import compat

__all__ = ["TorchSettings", "changes", "kept_settings", "read", "reset_torch_settings", "restore"]

# The seed a test cell starts the default generator from.
TEST_SEED = 0


@dataclass(frozen=True)
class TorchSettings:
    """The process-wide settings an answer could leave changed (this thread's, for modes)."""

    grad_enabled: bool
    inference_mode: bool
    default_dtype: torch.dtype
    default_device: torch.device
    anomaly_mode: bool
    anomaly_check_nan: bool
    deterministic_algorithms: bool
    deterministic_warn_only: bool
    cudnn_deterministic: bool
    cudnn_benchmark: bool
    float32_matmul_precision: str


def read() -> TorchSettings:
    """Returns the settings as they are now."""
    return TorchSettings(
        grad_enabled=torch.is_grad_enabled(),
        inference_mode=torch.is_inference_mode_enabled(),
        default_dtype=torch.get_default_dtype(),
        default_device=torch.get_default_device(),
        anomaly_mode=torch.is_anomaly_enabled(),
        anomaly_check_nan=torch.is_anomaly_check_nan_enabled(),
        deterministic_algorithms=torch.are_deterministic_algorithms_enabled(),
        deterministic_warn_only=torch.is_deterministic_algorithms_warn_only_enabled(),
        cudnn_deterministic=bool(torch.backends.cudnn.deterministic),
        cudnn_benchmark=bool(torch.backends.cudnn.benchmark),
        float32_matmul_precision=torch.get_float32_matmul_precision(),
    )


# torch's own defaults: what a fresh process has.
DEFAULTS = TorchSettings(
    grad_enabled=True,
    inference_mode=False,
    default_dtype=torch.float32,
    default_device=torch.device("cpu"),
    anomaly_mode=False,
    anomaly_check_nan=True,
    deterministic_algorithms=False,
    deterministic_warn_only=False,
    cudnn_deterministic=False,
    cudnn_benchmark=False,
    float32_matmul_precision="highest",
)


def restore(settings: TorchSettings) -> None:
    """Puts every setting back to ``settings``."""
    now = read()
    if now.inference_mode and not settings.inference_mode:
        compat.leave_inference_mode()
    torch.set_grad_enabled(settings.grad_enabled)
    if now.default_dtype != settings.default_dtype:
        torch.set_default_dtype(settings.default_dtype)
    if settings.default_device == torch.device("cpu"):
        torch.set_default_device(None)  # leaves a default set to "cpu" too: no mode stays
    elif now.default_device != settings.default_device:
        torch.set_default_device(settings.default_device)
    torch.set_anomaly_enabled(settings.anomaly_mode, settings.anomaly_check_nan)
    torch.use_deterministic_algorithms(
        settings.deterministic_algorithms, warn_only=settings.deterministic_warn_only
    )
    torch.backends.cudnn.deterministic = settings.cudnn_deterministic
    torch.backends.cudnn.benchmark = settings.cudnn_benchmark
    torch.set_float32_matmul_precision(settings.float32_matmul_precision)


_WORDS = {
    "grad_enabled": "grad mode",
    "inference_mode": "inference mode",
    "default_dtype": "the default dtype",
    "default_device": "the default device",
    "anomaly_mode": "anomaly mode",
    "anomaly_check_nan": "anomaly mode's NaN check",
    "deterministic_algorithms": "deterministic algorithms",
    "deterministic_warn_only": "deterministic algorithms' warn_only",
    "cudnn_deterministic": "torch.backends.cudnn.deterministic",
    "cudnn_benchmark": "torch.backends.cudnn.benchmark",
    "float32_matmul_precision": "the float32 matmul precision",
}


def _said(value: object) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def changes(before: TorchSettings, after: TorchSettings) -> list[str]:
    """What differs between two readings, in plain words (``"grad mode: on -> off"``)."""
    return [
        f"{_WORDS[field.name]}: {_said(getattr(before, field.name))} -> "
        f"{_said(getattr(after, field.name))}"
        for field in fields(TorchSettings)
        if getattr(before, field.name) != getattr(after, field.name)
    ]


@contextlib.contextmanager
def kept_settings() -> Iterator[list[str]]:
    """Within this block, the settings and the default generator are put back at its end.

    Yields:
        A list that, once the block has ended, holds what the block changed (the
        generator aside).
    """
    before = read()
    generator = torch.get_rng_state()
    found: list[str] = []
    try:
        yield found
    finally:
        found += changes(before, read())
        restore(before)
        torch.set_rng_state(generator)


def reset_torch_settings() -> None:
    """Puts torch's defaults back and reseeds the default generator: the tests start clean.

    Called at the top of every test cell, so that what an earlier cell left (an answer
    that turned autograd off, a seed) does not reach these tests.
    """
    restore(DEFAULTS)
    torch.manual_seed(TEST_SEED)
