"""What torch calls, tensor methods and attributes return, as the analysis models them.

A table-driven model of the part of PyTorch the rules need: which calls make tensors and
whether those require grad, which return views (sharing the version counter), which
reduce to one number, which write in place, and what each op saves for backward (the
table of notebook 02a, section 5: ``b * c`` saves each factor when the other requires
grad, ``b ** 2`` and ``log`` save their input, ``exp``/``sigmoid``/``tanh``/``relu``
their output). A call the model does not know gives ``UNKNOWN``.
"""

from __future__ import annotations

import ast

from autograd_pitfalls.lint.values import (
    LOSS_FN,
    MAYBE,
    MODEL_OUTPUT,
    NO,
    NONE,
    NUMBER,
    OBJECT,
    OPTIMIZER,
    PACKED,
    PARAMS,
    RENORM,
    RNN,
    SHAPED,
    STRING,
    UNKNOWN,
    YES,
    Save,
    Value,
    list_of,
    ref,
    tensor,
)

__all__ = [
    "FULL_REDUCTIONS",
    "INPLACE_NOT_WRITES",
    "attribute_of",
    "binary_op",
    "builtin_call",
    "compute",
    "is_inplace_method",
    "is_model_name",
    "module_call",
    "names",
    "tensor_method",
    "torch_call",
]


def names(text: str) -> frozenset[str]:
    """The whitespace-separated names of ``text``, as a set (the tables below)."""
    return frozenset(text.split())


# What each op saves for backward (a subset: the ops the course teaches, and their kin).
SAVES_RESULT = names(
    "exp exp2 expm1 sigmoid tanh relu relu6 sqrt rsqrt softmax log_softmax reciprocal"
)
SAVES_INPUT = names(
    "pow log log2 log10 log1p sin cos tan abs square clamp clip leaky_relu gelu silu erf "
    "atan sinh cosh std var mse_loss l1_loss smooth_l1_loss"
)
SAVES_INPUT_AND_RESULT = frozenset({"norm", "prod", "cumprod"})
SAVES_EACH_OTHER = frozenset({"mul", "matmul", "mm", "bmm", "mv", "dot", "outer", "linear"})

# Methods that return a view: it shares its base's memory and version counter.
VIEWS = names(
    "view view_as reshape reshape_as t transpose permute squeeze unsqueeze expand expand_as "
    "narrow select unfold flatten unflatten diagonal as_strided movedim swapaxes swapdims "
    "detach real imag"
)
VIEW_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "real", "imag"})
# Reductions that give one number when called without a dim.
FULL_REDUCTIONS = names(
    "sum mean max min prod norm std var dist dot amax amin logsumexp nansum nanmean median"
)
# Copies (new memory), same requires-grad state.
COPIES = names(
    "clone contiguous cpu cuda to float double half bfloat16 long int bool type type_as pin_memory"
)
# Math that gives a new tensor with the inputs' requires-grad state.
MATH = names(
    "abs add sub mul div true_divide floor_divide matmul mm bmm mv dot outer pow exp exp2 "
    "expm1 log log2 log10 log1p sin cos tan sinh cosh atan tanh sigmoid relu relu6 sqrt "
    "rsqrt square softmax log_softmax reciprocal clamp clip neg sign erf masked_fill "
    "gather index_select where repeat tile roll flip cumsum cumprod sort topk "
    "leaky_relu gelu silu elu softplus lerp maximum minimum fmod remainder baddbmm addmm "
    "chunk split unbind argmax argmin round floor ceil trunc frac lt gt le ge eq ne "
    "logical_not logical_and logical_or isnan isinf nonzero sum_to_size"
)
# In-place methods (trailing underscore) that write no values the version counter sees.
INPLACE_NOT_WRITES = frozenset({"requires_grad_", "share_memory_", "detach_", "retain_grad_"})
# Methods that give a Python number (or list of them), never a tensor.
TO_PYTHON = frozenset({"item", "tolist", "size", "dim", "numel", "element_size", "nelement"})
# torch.* functions that do not return a tensor.
NOT_TENSOR_PREFIXES = (
    "torch.cuda.",
    "torch.backends.",
    "torch.distributed.",
    "torch.utils.",
    "torch.is_",
    "torch.get_",
    "torch.set_",
    "torch.manual_seed",
    "torch.numel",
    "torch.device",
    "torch.dtype",
    "torch.Size",
    "torch.no_grad",
    "torch.enable_grad",
    "torch.inference_mode",
    "torch.load",
    "torch.save",
    "torch.jit.",
    "torch.compile",
    "torch.onnx.",
    "torch.hub.",
    "torch.multiprocessing.",
    "torch.profiler.",
    "torch.testing.",
    "torch.optim.",
    "torch.autograd.",
    "torch.nn.",
    "torch.fx.",
    "torch.library.",
    "torch.export.",
    "torch.func.",
    "torch.amp.",
    "torch.random.",
    "torch.finfo",
    "torch.iinfo",
    "torch.Generator",
    "torch.Tensor",
    "torch.typename",
)
# Factories: a new leaf, requiring grad only with requires_grad=True.
FACTORIES = names(
    "tensor as_tensor asarray from_numpy zeros ones empty full arange range linspace logspace "
    "eye rand randn randint randperm normal zeros_like ones_like empty_like full_like "
    "rand_like randn_like randint_like FloatTensor DoubleTensor LongTensor IntTensor "
    "ByteTensor BoolTensor HalfTensor Tensor scalar_tensor"
)
# nn classes without parameters: their output requires grad only if their input does.
PARAMETERLESS = names(
    "ReLU ReLU6 LeakyReLU ELU SELU CELU GELU SiLU Mish Sigmoid Tanh Softmax LogSoftmax "
    "Softplus Softsign Hardtanh Hardsigmoid Hardswish Tanhshrink Threshold Dropout Dropout1d "
    "Dropout2d Dropout3d AlphaDropout Identity Flatten Unflatten MaxPool1d MaxPool2d "
    "MaxPool3d AvgPool1d AvgPool2d AvgPool3d AdaptiveAvgPool1d AdaptiveAvgPool2d "
    "AdaptiveAvgPool3d AdaptiveMaxPool1d AdaptiveMaxPool2d AdaptiveMaxPool3d Upsample "
    "PixelShuffle ZeroPad2d ConstantPad1d ConstantPad2d ReflectionPad2d ReplicationPad2d "
    "CosineSimilarity PairwiseDistance Softmax2d"
)
# nn modules whose call saves their input (the weight requires grad), as F.linear.
SAVES_MODULE_INPUT = frozenset({"Linear", "Bilinear", "Conv1d", "Conv2d", "Conv3d"})
SAVES_MODULE_RESULT = frozenset({"ReLU", "Sigmoid", "Tanh", "Softmax", "LogSoftmax", "ReLU6"})
RECURRENT = frozenset({"RNN", "LSTM", "GRU"})
# Imported packages whose calls never return a torch tensor (numpy arrays, datasets, ...).
NOT_TORCH_PACKAGES = (
    "numpy.",
    "pandas.",
    "sklearn.",
    "scipy.",
    "PIL.",
    "cv2.",
    "matplotlib.",
    "json.",
    "yaml.",
    "argparse.",
    "os.",
    "re.",
    "collections.",
    "torchvision.datasets.",
    "torchtext.",
    "datasets.",
)
_PACK = frozenset({"pack_padded_sequence", "pack_sequence", "pack_padded", "PackedSequence"})
_NUMBER_BUILTINS = frozenset({"float", "int", "len", "round", "bool", "abs", "hash", "ord"})
_OBJECT_BUILTINS = frozenset(
    {"print", "str", "repr", "format", "open", "dict", "set", "isinstance", "hasattr", "id"}
)


def is_inplace_method(name: str) -> bool:
    """``add_``, ``zero_``: a tensor method that writes into its receiver."""
    return name.endswith("_") and not name.startswith("_") and name not in INPLACE_NOT_WRITES


def _grad_of(value: Value) -> int:
    """What ``value`` contributes to an op's requires-grad state."""
    kind = value.kind
    if kind == "tensor":
        return value.grad
    if kind == "unknown":
        return MAYBE
    return NO  # numbers, strings, None


def compute(
    an,
    node: ast.AST,
    op: str,
    operands: tuple[Value, ...] | list[Value],
    *,
    zero_dim: bool = False,
    loss: bool = False,
    flags: int = 0,
) -> Value:
    """A new tensor computed by ``op`` from ``operands``, with what ``op`` saves.

    Args:
        an: The analyzer (grad mode, the unit being read).
        node: The expression (where a save is reported).
        op: The op's name, as in the tables above (``"mul"``, ``"exp"``).
        operands: The op's inputs, ``self`` first.
        zero_dim: The result holds one number.
        loss: The result is a loss.
        flags: Value flags for the result.
    """
    if an.no_grad:
        return tensor(NO, zero_dim=zero_dim, loss=loss, flags=flags)
    grad = NO
    inputs = []
    for operand in operands:
        operand_grad = _grad_of(operand)
        if operand_grad > grad:
            grad = operand_grad
        if operand_grad and operand.kind == "tensor":
            inputs.append(operand)
    result = tensor(grad, zero_dim=zero_dim, loss=loss, inputs=tuple(inputs), flags=flags)
    if grad == NO:
        return result
    # A one-input op saves when its input may require grad: a backward() that reaches
    # it at all reaches it through that input. A product saves a factor only when the
    # other factor surely requires grad (which one does decides what is saved).
    first = operands[0] if operands else UNKNOWN
    saves: list[Save] = []
    unit = an.unit
    if op in SAVES_RESULT:
        saves.append(Save(result.storage, node, op, unit))
    elif op in SAVES_INPUT:
        if first.kind == "tensor" and first.grad != NO and first.storage is not None:
            saves.append(Save(first.storage, node, op, unit))
    elif op in SAVES_INPUT_AND_RESULT:
        if first.kind == "tensor" and first.grad != NO and first.storage is not None:
            saves.append(Save(first.storage, node, op, unit))
        saves.append(Save(result.storage, node, op, unit))
    elif (op in SAVES_EACH_OTHER or op == "div") and len(operands) >= 2:
        other = operands[1]
        if first.kind == "tensor" and first.storage is not None and other.grad == YES:
            saves.append(Save(first.storage, node, op, unit))
        other_saved = first.grad == YES or (op == "div" and other.grad == YES)
        if other.kind == "tensor" and other.storage is not None and other_saved:
            saves.append(Save(other.storage, node, op, unit))
    if saves:
        result.saves = tuple(saves)
    return result


def _literal_true(value: ast.AST | None) -> bool:
    return isinstance(value, ast.Constant) and value.value is True


def _keyword(node: ast.Call, name: str) -> ast.expr | None:
    for keyword in node.keywords:
        if keyword.arg == name:
            return keyword.value
    return None


def _has_dim(node: ast.Call) -> bool:
    """A reduction given a dim (positionally or by keyword): not a full reduction."""
    return bool(node.args) or any(k.arg in ("dim", "axis") for k in node.keywords)


def _factory(an, node: ast.Call, name: str, args: list[Value]) -> Value:
    requires_grad = _keyword(node, "requires_grad")
    wants_grad = requires_grad is not None and not (
        isinstance(requires_grad, ast.Constant) and requires_grad.value in (False, None)
    )
    grad = YES if wants_grad and _literal_true(requires_grad) else (MAYBE if wants_grad else NO)
    zero_dim = shaped = False
    if name in ("tensor", "as_tensor", "scalar_tensor") and node.args:
        first = node.args[0]
        zero_dim = isinstance(first, ast.Constant) and isinstance(first.value, int | float)
        if not zero_dim and args and args[0].kind == "number":
            zero_dim = True
        shaped = isinstance(first, ast.List | ast.Tuple)
    elif name in ("zeros", "ones", "empty", "randn", "rand", "full") and node.args:
        first = node.args[0]
        zero_dim = isinstance(first, ast.Tuple) and not first.elts
        shaped = not zero_dim
    if name == "as_tensor" and args and args[0].kind == "tensor":
        return args[0]  # as_tensor(t) is t itself
    return tensor(grad, leaf=grad == YES, zero_dim=zero_dim, flags=SHAPED if shaped else 0)


def torch_call(an, node: ast.Call, qual: str, args: list[Value], keywords: dict) -> Value:
    """What a call of ``qual`` (a name under ``torch.``) returns."""
    name = qual.rsplit(".", 1)[-1]
    if qual in ("torch.nn.Parameter", "torch.nn.parameter.Parameter"):
        requires_grad = _keyword(node, "requires_grad")
        off = isinstance(requires_grad, ast.Constant) and requires_grad.value is False
        grad = NO if off else YES
        if len(node.args) >= 2:
            second = node.args[1]
            if isinstance(second, ast.Constant) and second.value is False:
                grad = NO
        return tensor(grad, leaf=grad == YES, param=grad == YES)
    if qual in ("torch.autograd.Variable", "torch.autograd.variable.Variable"):
        # Since 0.4 Variable(t) is t.detach(); old code relied on requires_grad=True here.
        wants = _literal_true(_keyword(node, "requires_grad"))
        first = args[0] if args else UNKNOWN
        return tensor(
            YES if wants else MAYBE,
            leaf=wants,
            zero_dim=first.zero_dim,
            loss=first.loss,
            storage=first.storage if first.kind == "tensor" else None,
        )
    if qual.startswith("torch.nn."):
        return _nn_call(an, node, qual, name, args)
    if qual.startswith("torch.optim.") and not qual.startswith("torch.optim.lr_scheduler"):
        return Value("object", flags=OPTIMIZER) if name[:1].isupper() else OBJECT
    if qual in ("torch.autograd.grad",):
        return list_of(tensor(NO if an.no_grad else MAYBE))
    if qual.startswith("torch.autograd.") or qual.startswith(NOT_TENSOR_PREFIXES):
        if name in _PACK:
            return Value("object", flags=PACKED)
        return OBJECT
    if name in FACTORIES and qual.count(".") == 1:
        return _factory(an, node, name, args)
    if name in ("stack", "cat", "concat", "hstack", "vstack", "block_diag", "cartesian_prod"):
        pieces = args[0] if args else UNKNOWN
        element = pieces.item or (pieces.items[0] if pieces.items else UNKNOWN)
        items = pieces.items if pieces.items else (element,)
        return compute(an, node, name, items)
    if name in ("autograd",):
        return OBJECT
    zero_dim = name in FULL_REDUCTIONS and len(node.args) <= 1 and not keywords.get("dim")
    return compute(an, node, name, args, zero_dim=zero_dim)


def _nn_call(an, node: ast.Call, qual: str, name: str, args: list[Value]) -> Value:
    if qual.startswith("torch.nn.functional."):
        if name.endswith("_loss") or name in ("cross_entropy", "nll_loss", "kl_div"):
            reduction = _keyword(node, "reduction")
            not_reduced = isinstance(reduction, ast.Constant) and reduction.value == "none"
            return compute(an, node, name, args, zero_dim=not not_reduced, loss=True)
        if name in ("embedding",):
            return compute(an, node, name, args)
        return compute(an, node, name, args)
    if qual.startswith("torch.nn.utils.rnn."):
        if name in _PACK:
            return Value("object", flags=PACKED)
        if name.startswith("pad_packed"):
            return Value("tuple", items=(compute(an, node, name, args), OBJECT))
        return compute(an, node, name, args)
    if qual.startswith("torch.nn.init."):
        return args[0] if args else UNKNOWN
    if qual.startswith("torch.nn.utils."):
        return OBJECT
    if not name[:1].isupper():
        return UNKNOWN
    # A layer or loss class: instantiating it gives a module.
    flags = 0
    if name.endswith("Loss"):
        flags |= LOSS_FN
    elif name not in PARAMETERLESS:
        flags |= PARAMS
    if name in RECURRENT:
        flags |= RNN
    if name == "Embedding" or name == "EmbeddingBag":
        max_norm = _keyword(node, "max_norm")
        if max_norm is None and len(node.args) >= 3:
            max_norm = node.args[2]
        if max_norm is not None and not (
            isinstance(max_norm, ast.Constant) and max_norm.value is None
        ):
            flags |= RENORM
    return Value("module", qual=qual, flags=flags)


def module_call(an, node: ast.Call, module: Value, args: list[Value]) -> Value:
    """What calling a module (a layer, a loss, a model of the checked code) returns."""
    flags = module.flags
    first = args[0] if args else UNKNOWN
    if flags & LOSS_FN:
        reduction = _keyword(node, "reduction")
        return compute(an, node, "loss", args, zero_dim=reduction is None, loss=True)
    name = (module.qual or "").rsplit(".", 1)[-1]
    if flags & RNN:
        output = (
            Value("object", flags=PACKED)
            if first.flags & PACKED
            else compute(an, node, name, [tensor(YES), *args])
        )
        hidden = compute(an, node, name, [tensor(YES), *args])
        return Value("tuple", items=(output, Value("tuple", item=hidden)))
    if flags & PARAMS:
        op = "linear" if name in SAVES_MODULE_INPUT else name
        weight = tensor(YES, leaf=True, param=True)
        return compute(an, node, op, [first, weight, *args[1:]])
    op = "relu" if name in SAVES_MODULE_RESULT else name
    if name in SAVES_MODULE_RESULT:
        op = name.lower().replace("logsoftmax", "log_softmax")
    return compute(an, node, op, args)


def tensor_method(
    an, node: ast.Call, receiver: Value, method: str, args: list[Value]
) -> Value | None:
    """What ``receiver.method(...)`` returns when the receiver is (or may be) a tensor.

    None when the method is not one the model knows for a tensor.
    """
    if method in VIEWS:
        if method == "detach":
            return tensor(NO, storage=receiver.storage, zero_dim=receiver.zero_dim)
        grad = NO if an.no_grad else _grad_of(receiver)
        return tensor(
            grad,
            storage=receiver.storage,
            zero_dim=receiver.zero_dim and method != "view",
            loss=receiver.loss,
            inputs=(receiver,) if grad else (),
        )
    if method in FULL_REDUCTIONS:
        full = not _has_dim(node)
        if method in ("max", "min", "median") and not full:
            values = compute(an, node, method, [receiver])
            return Value("tuple", items=(values, tensor(NO)))
        return compute(an, node, method, [receiver, *args], zero_dim=full, loss=receiver.loss)
    if method in COPIES:
        grad = NO if an.no_grad else _grad_of(receiver)
        result = tensor(
            grad,
            zero_dim=receiver.zero_dim,
            loss=receiver.loss,
            inputs=(receiver,) if grad else (),
            flags=receiver.flags & MODEL_OUTPUT,
        )
        return result
    if method in MATH:
        return compute(an, node, method, [receiver, *args])
    if method in TO_PYTHON:
        return list_of(NUMBER) if method == "tolist" else NUMBER
    if method == "numpy":
        return OBJECT
    if method == "requires_grad_":
        off = node.args and isinstance(node.args[0], ast.Constant) and not node.args[0].value
        grad = NO if off else YES
        return tensor(grad, leaf=grad == YES, storage=receiver.storage)
    if method in ("new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"):
        return tensor(NO)
    if method == "backward" or method == "register_hook" or method == "retain_grad":
        return NONE
    if is_inplace_method(method):
        return receiver
    return None


def attribute_of(receiver: Value, attribute: str) -> Value:
    """What ``receiver.attribute`` holds."""
    kind = receiver.kind
    if kind == "ref":
        return ref(f"{receiver.qual}.{attribute}")
    if kind == "tensor":
        if attribute in ("data",):
            return tensor(NO, zero_dim=receiver.zero_dim)  # its own counter: writes are hidden
        if attribute == "grad":
            return tensor(NO)
        if attribute in VIEW_ATTRIBUTES:
            return tensor(receiver.grad, storage=receiver.storage, inputs=(receiver,))
        if attribute in ("shape", "dtype", "device", "grad_fn", "layout"):
            return OBJECT
        if attribute in ("requires_grad", "is_leaf", "is_cuda", "ndim", "_version"):
            return NUMBER
        return UNKNOWN
    if kind == "module":
        if receiver.info is not None:  # a model of the checked code: what __init__ set
            known = receiver.info.attributes.get(attribute)  # type: ignore[union-attr]
            if known is not None:
                return known
        if attribute in ("weight", "bias", "weight_ih_l0", "weight_hh_l0"):
            return tensor(YES, leaf=True, param=True)
        return UNKNOWN
    if kind == "instance" and receiver.info is not None:
        return receiver.info.attributes.get(attribute, UNKNOWN)  # type: ignore[union-attr]
    if kind == "object" and receiver.flags & PACKED:
        if attribute == "data":
            return tensor(MAYBE)
        return OBJECT
    return UNKNOWN


def builtin_call(name: str, args: list[Value]) -> Value | None:
    """What a call of a Python builtin returns (None: not a builtin the model knows)."""
    if name in _NUMBER_BUILTINS:
        return NUMBER
    if name in _OBJECT_BUILTINS:
        return STRING if name in ("str", "repr", "format") else OBJECT
    first = args[0] if args else UNKNOWN
    if name in ("list", "tuple", "sorted", "reversed", "iter", "set", "frozenset"):
        return list_of(first.element())
    if name == "enumerate":
        return list_of(Value("tuple", items=(NUMBER, first.element())))
    if name == "zip":
        return list_of(Value("tuple", items=tuple(arg.element() for arg in args)))
    if name == "range":
        return list_of(NUMBER)
    if name == "sum":
        element = first.element()
        return element if element.kind == "tensor" else (UNKNOWN if element is UNKNOWN else NUMBER)
    if name in ("max", "min") and len(args) == 1:
        return first.element()
    if name == "next":
        return first.element()
    return None


_BINARY_OPS = {
    ast.Add: "add",
    ast.Sub: "sub",
    ast.Mult: "mul",
    ast.MatMult: "matmul",
    ast.Div: "div",
    ast.Pow: "pow",
    ast.FloorDiv: "floor_divide",
    ast.Mod: "remainder",
}


def binary_op(an, node: ast.AST, op: ast.operator, left: Value, right: Value) -> Value:
    """``left <op> right``: a tensor when either side is one, a number for two numbers."""
    left_kind, right_kind = left.kind, right.kind
    if left_kind == "tensor" or right_kind == "tensor":
        name = _BINARY_OPS.get(type(op), "op")
        if name == "pow" and left_kind != "tensor":
            name = "exp"  # 2 ** x saves its result
        zero_dim = (left.zero_dim or left_kind == "number") and (
            right.zero_dim or right_kind == "number"
        )
        result = compute(an, node, name, [left, right], zero_dim=zero_dim, loss=left.loss)
        if right.loss and not left.loss:
            result.loss = True
        return result
    if left_kind == "number" and right_kind == "number":
        return NUMBER
    if left_kind == "str" or right_kind == "str":
        return STRING
    if left_kind in ("list", "tuple") and right_kind in ("list", "tuple"):
        return Value("list", item=left.element())
    return UNKNOWN


def is_model_name(name: str) -> bool:
    """A callee named like a model: its output is the model's, whatever it is."""
    return name in ("model", "net", "network", "encoder", "decoder", "generator", "classifier")
