"""Observations: what a hidden check's probe saw, as plain data that crosses the sandbox's wall.

A probe runs in the student's kernel and returns Python values (tensors, numbers,
strings, lists and dicts of them). :func:`encode` turns them into JSON-ready data that
keeps what a judge needs of a tensor (values, dtype, device, shape, ``requires_grad``,
``is_leaf``, ``grad_fn``, ``_version``) and nothing executable; :func:`dumps` bounds the
text. On the grader's side, :func:`loads` checks size, depth and a JSON schema before
:func:`decode` builds :class:`TensorSeen` records back. Nothing is ever unpickled.

Encoding (unambiguous: every dict is tagged, so a student's dict cannot pose as a tensor):

* ``None``, ``bool``, ``int``, finite ``float``, ``str``: as they are (a subclass of
  ``str``, ``int`` or ``float``, such as a ``str``-valued Enum, as its base value, and
  a NumPy scalar of those kinds, such as ``numpy.int64`` or ``numpy.bool_``, as Python's);
* a non-finite float: ``{"__float__": "nan" | "inf" | "-inf"}``;
* a list or tuple: a JSON list;
* a dict with ``str`` keys: ``{"__dict__": {...}}``;
* a tensor: ``{"__tensor__": {...}}`` (see :func:`_encode_tensor`);
* anything else: ``{"__object__": "<class name>"}``, which a judge reports as a wrong type.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from autograd_pitfalls import compat
from autograd_pitfalls.standin import StandInTensor

__all__ = [
    "MAX_CHARS",
    "ObjectSeen",
    "ObservationError",
    "TensorSeen",
    "decode",
    "dumps",
    "encode",
    "loads",
]

# What one hidden check may send: far above what honest checks send (a few kB).
MAX_CHARS = 1_000_000
MAX_DEPTH = 16
MAX_TENSOR_ELEMENTS = 100_000
MAX_STRING = 4_000
_INT_LIMIT = 2**63

_NUMBER = {
    "oneOf": [
        {"type": ["number", "boolean"]},
        {"enum": ["nan", "inf", "-inf"]},
    ]
}
SCHEMA: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "$ref": "#/definitions/value",
    "definitions": {
        "value": {
            "oneOf": [
                {"type": ["null", "boolean", "number"]},
                {"type": "string", "maxLength": MAX_STRING},
                {"type": "array", "items": {"$ref": "#/definitions/value"}},
                {
                    "type": "object",
                    "required": ["__float__"],
                    "additionalProperties": False,
                    "properties": {"__float__": {"enum": ["nan", "inf", "-inf"]}},
                },
                {
                    "type": "object",
                    "required": ["__dict__"],
                    "additionalProperties": False,
                    "properties": {
                        "__dict__": {
                            "type": "object",
                            "propertyNames": {"maxLength": MAX_STRING},
                            "additionalProperties": {"$ref": "#/definitions/value"},
                        }
                    },
                },
                {
                    "type": "object",
                    "required": ["__object__"],
                    "additionalProperties": False,
                    "properties": {"__object__": {"type": "string", "maxLength": 200}},
                },
                {
                    "type": "object",
                    "required": ["__tensor__"],
                    "additionalProperties": False,
                    "properties": {"__tensor__": {"$ref": "#/definitions/tensor"}},
                },
            ]
        },
        "tensor": {
            "type": "object",
            "additionalProperties": False,
            "required": [
                "cls", "dtype", "device", "shape", "requires_grad", "is_leaf", "grad_fn",
                "version", "values",
            ],
            "properties": {
                "cls": {"type": "string", "maxLength": 200},
                "dtype": {"type": "string", "pattern": "^torch\\.[a-z0-9_]+$"},
                "device": {"type": "string", "maxLength": 50},
                "shape": {"type": "array", "items": {"type": "integer", "minimum": 0}},
                "requires_grad": {"type": "boolean"},
                "is_leaf": {"type": "boolean"},
                "grad_fn": {"type": ["string", "null"], "maxLength": 200},
                "version": {"type": ["integer", "null"]},
                "values": {
                    "oneOf": [
                        {"type": "null"},
                        {"type": "array", "maxItems": MAX_TENSOR_ELEMENTS, "items": _NUMBER},
                    ]
                },
            },
        },
    },
}  # fmt: skip


class ObservationError(ValueError):
    """Observations that are too large, too deep, not JSON, or not of the schema."""


@dataclass(frozen=True)
class ObjectSeen:
    """Something a probe could not encode: only its class name crossed the wall."""

    cls: str


@dataclass(frozen=True)
class TensorSeen:
    """A tensor as a probe saw it in the student's kernel.

    Attributes:
        cls: Its class name (``Tensor``, ``Parameter``, or a subclass's name).
        dtype: Its dtype.
        device: Its device, as ``str(tensor.device)`` (``"cpu"``, ``"meta"``, ``"cuda:0"``).
        shape: Its shape.
        requires_grad: ``tensor.requires_grad``.
        is_leaf: ``tensor.is_leaf``.
        grad_fn: The class name of its ``grad_fn``, or None.
        version: ``tensor._version`` (None where torch has none: inference tensors).
        values: Its values on the CPU with its dtype, or None (meta tensors, too large).
    """

    cls: str
    dtype: torch.dtype
    device: str
    shape: tuple[int, ...]
    requires_grad: bool
    is_leaf: bool
    grad_fn: str | None
    version: int | None
    values: torch.Tensor | None

    @property
    def device_type(self) -> str:
        """The device's type: ``"cpu"``, ``"meta"``, ``"cuda"``, ``"gpu"`` (the stand-in)."""
        return self.device.split(":")[0]

    def is_on(self, device: str) -> bool:
        """Whether the tensor was on ``device``, a device type as the probes name them.

        Args:
            device: ``"cpu"``, ``"cuda"``, or ``"gpu"``: the course's GPU
                (``autograd_pitfalls.GPU``), the stand-in's ``gpu`` on a machine without a
                GPU and ``cuda`` on one with a GPU, where the course uses the real one.
        """
        if device == "gpu":
            return self.device_type in ("gpu", "cuda")
        return self.device_type == device


def _number_out(value: float | bool) -> float | bool | str:
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def _class_name(tensor: torch.Tensor) -> str:
    # A tensor on the GPU stand-in is what a plain tensor or a Parameter is on CUDA.
    if type(tensor) is StandInTensor:
        return "Parameter" if getattr(tensor, "_is_param", False) is True else "Tensor"
    return type(tensor).__name__


def _encode_tensor(tensor: torch.Tensor) -> dict[str, Any]:
    """Encodes a tensor's metadata and values; never calls methods a subclass overrides."""
    with compat.disable_torch_function():
        plain = torch.Tensor.detach(tensor)
        grad_fn = tensor.grad_fn
        try:
            version: int | None = tensor._version
        except RuntimeError:  # inference tensors have no version counter
            version = None
        values = None
        readable = not (plain.is_complex() or plain.is_quantized or plain.is_sparse)
        if plain.device.type != "meta" and plain.numel() <= MAX_TENSOR_ELEMENTS and readable:
            try:
                values = [_number_out(item) for item in plain.to("cpu").reshape(-1).tolist()]
            except RuntimeError:  # a layout or subclass without data: values stay unknown
                values = None
        return {
            "cls": _class_name(tensor),
            "dtype": str(plain.dtype),
            "device": str(plain.device),
            "shape": list(plain.shape),
            "requires_grad": bool(tensor.requires_grad),
            "is_leaf": bool(tensor.is_leaf),
            "grad_fn": type(grad_fn).__name__ if grad_fn is not None else None,
            "version": version,
            "values": values,
        }


def _base_value(value: Any) -> Any:
    """A ``str``, ``int`` or ``float`` subclass's value as the base type; others unchanged.

    A ``str``-valued Enum is its string, an ``IntEnum`` its int, NumPy's ``float64`` its
    float. The base type's own method reads it, so a subclass's ``__str__`` is not called.
    (``bool`` cannot be subclassed: a bool stays a bool.) NumPy's other scalars of those
    kinds (``int64``, ``bool_``, ``float32``: a learner who counted with NumPy) are their
    Python value, as ``item()`` gives it.
    """
    kind = type(value)
    if kind in (bool, int, float, str):
        return value
    if kind.__module__ == "numpy" and not isinstance(value, (str, float)):
        item = getattr(value, "item", None)
        plain = item() if callable(item) and getattr(value, "shape", None) == () else None
        if type(plain) in (bool, int, float):
            return plain
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    return value


def encode(value: Any, _depth: int = 0) -> Any:
    """Turns what a probe returns into JSON-ready data (see the module's docstring).

    Args:
        value: Tensors, numbers, strings, None, and lists, tuples and dicts of them.
            Subclasses of ``str``, ``int`` and ``float`` (a ``str``-valued Enum) are
            observed as their base values.

    Returns:
        Plain JSON data. Strings are cut at ``MAX_STRING`` characters; structures deeper
        than ``MAX_DEPTH`` and objects of other classes become ``{"__object__": name}``.
    """
    value = _base_value(value)
    kind = type(value)
    if _depth > MAX_DEPTH:
        return {"__object__": "too deep"}
    if value is None or kind is bool:
        return value
    if kind is int:
        return value if -_INT_LIMIT < value < _INT_LIMIT else {"__object__": "int (too large)"}
    if kind is float:
        number = _number_out(value)
        return number if isinstance(number, float) else {"__float__": number}
    if kind is str:
        return value[:MAX_STRING]
    if kind in (list, tuple):
        return [encode(item, _depth + 1) for item in value]
    if kind is dict and all(isinstance(key, str) for key in value):
        keys = [_base_value(key)[:MAX_STRING] for key in value]
        if len(set(keys)) == len(keys):  # two keys that read the same cannot both cross
            return {
                "__dict__": {
                    key: encode(item, _depth + 1)
                    for key, item in zip(keys, value.values(), strict=True)
                }
            }
    if isinstance(value, torch.Tensor):
        return {"__tensor__": _encode_tensor(value)}
    return {"__object__": kind.__name__[:200]}


def dumps(value: Any) -> str:
    """Encodes ``value`` and returns it as JSON text (what a probe sends)."""
    return json.dumps(encode(value), allow_nan=False, separators=(",", ":"))


def _depth(data: Any) -> int:
    deepest, stack = 0, [(data, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > 4 * MAX_DEPTH + 8:
            break
        children = (
            item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        )
        stack.extend((child, depth + 1) for child in children)
    return deepest


def loads(text: Any) -> Any:
    """Parses and checks observations received from a kernel (the grader's side).

    Args:
        text: What arrived: it must be a string of at most ``MAX_CHARS`` characters.

    Returns:
        The JSON data, checked against :data:`SCHEMA`.

    Raises:
        ObservationError: Saying what is wrong (not text, too large, not JSON, too deep,
            not of the schema).
    """
    if not isinstance(text, str):
        raise ObservationError(f"observations should be JSON text, not {type(text).__name__}")
    if len(text) > MAX_CHARS:
        raise ObservationError(
            f"observations of {len(text):,} characters, more than the {MAX_CHARS:,} allowed"
        )
    try:
        data = json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as error:
        raise ObservationError(f"observations are not valid JSON: {error}") from None
    # A tensor's record sits two levels below its value, so real data stays well within.
    if _depth(data) > 2 * MAX_DEPTH + 8:
        raise ObservationError(f"observations nested deeper than {2 * MAX_DEPTH + 8} levels")
    import fastjsonschema  # only the grader's side validates

    try:
        _validator()(data)
    except fastjsonschema.JsonSchemaException as error:
        where = str(getattr(error, "name", "") or "data").replace("data", "the observations", 1)
        raise ObservationError(f"observations do not fit the schema at {where}") from None
    return data


@functools.cache
def _validator() -> Callable[[Any], Any]:
    """The schema compiled once per process (fastjsonschema: a fraction of a second)."""
    import fastjsonschema

    return fastjsonschema.compile(SCHEMA)


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not allowed (non-finite floats are tagged)")


def _number_in(value: float | bool | str) -> float:
    return float(value) if isinstance(value, str) else value  # "nan", "inf", "-inf"


def _decode_tensor(record: dict[str, Any]) -> TensorSeen:
    dtype = getattr(torch, record["dtype"].removeprefix("torch."), None)
    if not isinstance(dtype, torch.dtype):
        raise ObservationError(f"unknown dtype {record['dtype']!r}")
    shape = tuple(record["shape"])
    values = None
    if record["values"] is not None:
        numel = math.prod(shape)
        if numel != len(record["values"]):
            raise ObservationError(
                f"a tensor of shape {shape} came with {len(record['values'])} values"
            )
        flat = [_number_in(item) for item in record["values"]]
        if dtype.is_floating_point:
            values = torch.tensor(flat, dtype=torch.float64).to(dtype).reshape(shape)
        else:  # integers and bools, exactly
            values = torch.tensor([int(item) for item in flat], dtype=dtype).reshape(shape)
    return TensorSeen(
        cls=record["cls"],
        dtype=dtype,
        device=record["device"],
        shape=shape,
        requires_grad=record["requires_grad"],
        is_leaf=record["is_leaf"],
        grad_fn=record["grad_fn"],
        version=record["version"],
        values=values,
    )


def decode(data: Any) -> Any:
    """Builds Python values back from checked observations (the inverse of :func:`encode`).

    Returns:
        Lists, dicts, numbers, strings, None, :class:`TensorSeen` and :class:`ObjectSeen`.

    Raises:
        ObservationError: If a tensor's record does not hold together (shape and values).
    """
    if isinstance(data, list):
        return [decode(item) for item in data]
    if isinstance(data, dict):
        if "__dict__" in data:
            return {key: decode(item) for key, item in data["__dict__"].items()}
        if "__tensor__" in data:
            return _decode_tensor(data["__tensor__"])
        if "__float__" in data:
            return float(data["__float__"])
        return ObjectSeen(data["__object__"])
    return data
