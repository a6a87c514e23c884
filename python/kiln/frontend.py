"""Model importers (TVM's relay.frontend).

    mod, params = kiln.frontend.from_onnx("resnet18.onnx", {"data": (1, 3, 224, 224)})
    print(mod)          # def @main(%data: Tensor[(1, 3, 224, 224), float32], ...) { ... }

``mod`` is a kiln.IRModule (the graph, C: graph.from_onnx); ``params`` maps
the model's initializers that the graph uses to kiln.nd arrays, as TVM's
does.  Kiln binds the weights into the graph at import, so params are
informational: the arrays share the graph's memory, ``kiln.build(mod,
params=params)`` costs nothing for them, and arrays of new values given
to kiln.build replace the weights of those names.
"""
import os
import re

from . import _ffi
from ._ffi import KilnError, KilnTypeError


def _model_arg(model):
    """A path (str) or the model's bytes."""
    if isinstance(model, os.PathLike):
        return os.fspath(model)
    if isinstance(model, str):
        return model
    if isinstance(model, (bytes, bytearray, memoryview)):
        return bytes(model)
    if hasattr(model, "SerializeToString"):  # an onnx.ModelProto
        try:
            import onnx  # pylint: disable=import-outside-toplevel
            if not isinstance(model, onnx.ModelProto):
                raise KilnTypeError("from_onnx: expected an onnx.ModelProto, got %s"
                                    % type(model).__name__)
        except ImportError:
            pass
        return model.SerializeToString()
    raise KilnTypeError("from_onnx: the model must be a path, bytes or an onnx.ModelProto, got %s"
                        % type(model).__name__)


def _shape_args(shape):
    if shape is None:
        return []
    if not isinstance(shape, dict):
        raise KilnTypeError("from_onnx: shape must be a dict of input name -> shape, got %s"
                            % type(shape).__name__)
    args, text, symbolic = [], [], False
    for name, dims in shape.items():
        if not isinstance(name, str):
            raise KilnTypeError("from_onnx: input names are str, got %r" % (name,))
        if isinstance(dims, str) and (dims == "none" or re.fullmatch(r"seq\(\d+\)", dims)):
            # a sequence's length or an empty optional (docs/sequences.md)
            text.append("%s:%s" % (name, dims))
            symbolic = True
            continue
        try:
            dims = list(dims)
        except TypeError:
            raise KilnTypeError("from_onnx: the shape of '%s' must be a sequence of ints, got %r"
                                % (name, dims)) from None
        out = []
        for d in dims:
            if isinstance(d, str) and d.isidentifier():
                symbolic = True  # a symbol: any size at run time (docs/symbolic_shapes.md)
                out.append(d)
                continue
            if isinstance(d, bool) or not hasattr(d, "__index__"):
                raise KilnError("from_onnx: the shape of '%s' must be ints or symbol names (str), got %r"
                                % (name, tuple(dims)))
            out.append(int(d))
        args += [name, out]
        text.append("%s:[%s]" % (name, ",".join(str(d) for d in out)))
    # symbols go as the --input-shapes text, which the importer parses
    return [" ".join(text)] if symbolic else args


def from_onnx(model, shape=None, dtype="float32", opset=None, freeze_params=True,
              convert_config=None):
    """Import an ONNX model: a path, the model's bytes, or an onnx.ModelProto.

    shape: input name -> shape: sizes for the inputs' open dimensions, and
    overriding any dimension the model declares (TVM's behaviour); a
    dimension given as a name ("N") is symbolic: the built module runs at
    any size there (docs/symbolic_shapes.md).  A sequence input takes
    "seq(N)" (its length; each element's shape as "NAME[i]"), an optional
    input "none" when it is to be empty (docs/sequences.md).
    dtype: as in TVM, the inputs keep the model's types; a dict (name ->
    dtype) asserts them.  freeze_params: Kiln always binds the weights into
    the graph (TVM's freeze_params=True); params is returned either way.
    Returns (IRModule, params)."""
    # pylint: disable=unused-argument
    if opset is not None:
        raise KilnError("from_onnx: overriding the model's opset is not supported")
    if convert_config:
        raise KilnError("from_onnx: convert_config is not supported, got %r" % (convert_config,))
    if isinstance(dtype, dict):
        for k, v in dtype.items():
            _ffi.parse_dtype(v)
    else:
        _ffi.parse_dtype(dtype)
    mod = _ffi._get_api("graph.from_onnx")(_model_arg(model), *_shape_args(shape))
    if isinstance(dtype, dict):
        info = mod.input_info()
        for name, want in dtype.items():
            if name not in info:
                raise KilnError("from_onnx: a dtype is given for '%s', which is not an input of the "
                                "model (inputs: %s)" % (name, ", ".join(info)))
            have = info[name][1]
            if _ffi.dtype_str(_ffi.parse_dtype(want)) != have:
                raise KilnError("from_onnx: input '%s' is %s in the model, not %s (Kiln keeps the "
                                "model's input types)" % (name, have, want))
    return mod, mod.params


__all__ = ["from_onnx"]
