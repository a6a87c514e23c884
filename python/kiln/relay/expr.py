"""Relay expressions built from Python (TVM's relay.var, relay.const,
relay.Call, relay.Function, relay.Tuple), over the C API's relay.* builder.

Every expression is a node of Kiln's builder graph (src/api/api_relay.c),
made and type-checked when the Python call makes it: a mistake raises
KilnError naming the op at the line that made it.  A Function's outputs and
what they reach become a model graph with IRModule.from_expr; the graph
then prints, optimizes and builds as an imported model does.

    data = relay.var("data", shape=(1, 3, 32, 32))
    w = relay.var("w", shape=(8, 3, 3, 3))
    y = relay.nn.relu(relay.nn.conv2d(data, w, padding=(1, 1), channels=8, kernel_size=(3, 3)))
    mod = kiln.IRModule.from_expr(relay.Function([data, w], y))
    lib = relay.build(mod, target="llvm", params={"w": weights})
"""
import json

from .. import _ffi, nd
from .._ffi import KilnError, KilnTypeError


def _api(name):
    return _ffi._get_api(name)


class TensorType:
    """Tensor[(shape), dtype] (TVM's relay.TensorType)."""

    def __init__(self, shape, dtype="float32"):
        self.shape = tuple(int(x) for x in shape)
        self.dtype = str(dtype)

    @property
    def concrete_shape(self):
        return self.shape

    def __eq__(self, other):
        return isinstance(other, TensorType) and (self.shape, self.dtype) == (other.shape, other.dtype)

    def __hash__(self):
        return hash((self.shape, self.dtype))

    def __repr__(self):
        dims = ", ".join(str(d) for d in self.shape) + ("," if len(self.shape) == 1 else "")
        return "Tensor[(%s), %s]" % (dims, self.dtype)


class Expr:
    """A Relay expression: a node of the builder graph (its id)."""

    __slots__ = ("node", "_args")

    def __init__(self, node, args=()):
        self.node = int(node)
        self._args = tuple(args)

    def _info(self):
        return json.loads(_api("relay.info")(self.node))

    @property
    def checked_type(self):
        i = self._info()
        return TensorType(i["shape"], i["dtype"])

    type_annotation = checked_type

    def astext(self, show_meta_data=False):  # pylint: disable=unused-argument
        return str(Function(_free_vars(self), self))

    def __str__(self):
        return self.astext()

    def __repr__(self):
        i = self._info()
        what = i.get("op") or i["name"]
        return "<relay.%s %s: %r>" % (type(self).__name__, what, self.checked_type)

    # TVM's operators on expressions
    def __add__(self, other):
        return _binary("add", self, other)

    def __radd__(self, other):
        return _binary("add", other, self)

    def __sub__(self, other):
        return _binary("subtract", self, other)

    def __rsub__(self, other):
        return _binary("subtract", other, self)

    def __mul__(self, other):
        return _binary("multiply", self, other)

    def __rmul__(self, other):
        return _binary("multiply", other, self)

    def __truediv__(self, other):
        return _binary("divide", self, other)

    def __rtruediv__(self, other):
        return _binary("divide", other, self)

    def __neg__(self):
        return call_op("negative", {}, [self])

    def astype(self, dtype):
        return call_op("cast", {"dtype": str(dtype)}, [self])


class Var(Expr):
    """A variable: a function parameter (an input, or a weight bound by
    relay.build's params)."""

    __slots__ = ()

    @property
    def name_hint(self):
        return self._info()["name"]


class Constant(Expr):
    """A constant tensor (relay.const)."""

    __slots__ = ()

    @property
    def data(self):
        raise KilnError("relay.Constant.data: Kiln keeps the value in the graph; keep your array")


class Call(Expr):
    """An operator call."""

    __slots__ = ()

    @property
    def op(self):
        return self._info()["op"]

    @property
    def args(self):
        return list(self._args)


class Tuple:
    """A tuple of expressions: a function's several outputs, or the input
    list of concatenate."""

    def __init__(self, fields):
        self.fields = [as_expr(f) for f in fields]

    def __getitem__(self, i):
        return self.fields[i]

    def __len__(self):
        return len(self.fields)

    def astuple(self):
        return self


class TupleWrapper:
    """An op whose Relay result is a tuple (nn.batch_norm): field 0 is the
    result; Kiln computes no other field (batch norm's updated mean and
    variance are for training)."""

    def __init__(self, expr, size, op):
        self.expr, self.size, self.op = expr, size, op

    def __getitem__(self, i):
        if i == 0:
            return self.expr
        if -self.size <= i < self.size:
            raise KilnError("%s: Kiln computes field 0 of its result only (inference), not field %d"
                            % (self.op, i))
        raise IndexError("%s gives a tuple of %d fields" % (self.op, self.size))

    def __len__(self):
        return self.size

    def astuple(self):
        return Tuple([self.expr])


class Function:
    """relay.Function(params, body): params are Vars; body an expression
    or a Tuple (several outputs).  Printing gives Relay's text,
    fn (%data: Tensor[...], ...) -> ... { ... }."""

    def __init__(self, params, body, ret_type=None, type_params=None, attrs=None):
        # pylint: disable=unused-argument
        self.params = list(params)
        for p in self.params:
            if not isinstance(p, Var):
                raise KilnTypeError("relay.Function: parameters must be relay.var, got %s" % type(p).__name__)
        self.body = body if isinstance(body, Tuple) else as_expr(body)

    @property
    def outputs(self):
        return list(self.body.fields) if isinstance(self.body, Tuple) else [self.body]

    def _graph(self):
        return _api("relay.function")(len(self.params), *[p.node for p in self.params],
                                     *[o.node for o in self.outputs])

    def astext(self, show_meta_data=False):  # pylint: disable=unused-argument
        return self._graph().astext_fn()

    def __str__(self):
        return self.astext()


def _free_vars(expr):
    """The variables expr reaches, in order of first appearance."""
    seen, out, stack = set(), [], [expr]
    order = []
    while stack:  # iterative DFS: deep graphs (VGG, ResNet) exceed recursion limits
        e = stack.pop()
        if isinstance(e, Tuple):
            stack.extend(reversed(e.fields))
            continue
        if e.node in seen:
            continue
        seen.add(e.node)
        order.append(e)
        stack.extend(reversed(e._args))
    for e in sorted(order, key=lambda x: x.node):
        if isinstance(e, Var):
            out.append(e)
    return out


def free_vars(expr):
    """TVM's relay.analysis.free_vars."""
    return _free_vars(expr)


def var(name_hint, type_annotation=None, shape=None, dtype="float32"):
    """relay.var("data", shape=(1, 3, 224, 224), dtype="float32"), or
    relay.var("x", relay.TensorType((4,), "float32"))."""
    if isinstance(type_annotation, TensorType):
        shape, dtype = type_annotation.shape, type_annotation.dtype
    elif isinstance(type_annotation, str):
        dtype = type_annotation
    elif type_annotation is not None:
        raise KilnTypeError("relay.var: the type annotation must be a relay.TensorType or a dtype, got %s"
                            % type(type_annotation).__name__)
    if shape is None:
        raise KilnError("relay.var('%s'): give its shape (Kiln's graphs have static shapes)" % name_hint)
    dims = [int(d) for d in (shape if isinstance(shape, (list, tuple)) else (shape,))]
    return Var(_api("relay.var")(str(name_hint), str(dtype), *dims))


def const(value, dtype=None):
    """A constant from a number or an array (NumPy or kiln.nd)."""
    import numpy as np  # pylint: disable=import-outside-toplevel
    if isinstance(value, nd.NDArray):
        value = value.numpy()
    if isinstance(value, (bool, int, float)) and dtype is None:
        dtype = "bool" if isinstance(value, bool) else "int32" if isinstance(value, int) else "float32"
    arr = np.asarray(value, dtype=dtype)
    if arr.dtype == np.float64 and dtype is None:
        arr = arr.astype("float32")  # TVM's relay.const does the same
    return Constant(_api("relay.const")(nd.array(np.ascontiguousarray(arr))))


def as_expr(x):
    if isinstance(x, Expr):
        return x
    if isinstance(x, TupleWrapper):
        return x.expr
    if isinstance(x, (int, float, bool)):
        return const(x)
    if type(x).__name__ == "ndarray" or isinstance(x, nd.NDArray):
        return const(x)
    raise KilnTypeError("expected a relay expression, got %s" % type(x).__name__)


def _binary(op, a, b):
    a, b = as_expr(a), as_expr(b)
    if isinstance(a, Constant) and not isinstance(b, Constant):
        a = _like(a, b)
    elif isinstance(b, Constant) and not isinstance(a, Constant):
        b = _like(b, a)
    return call_op(op, {}, [a, b])


def _like(c, other):
    """A Python number made a constant takes the other operand's dtype."""
    ci, oi = c._info(), other._info()
    if ci["shape"] == [] and ci["dtype"] != oi["dtype"]:
        return call_op("cast", {"dtype": oi["dtype"]}, [c])
    return c


def _attr_json(v, op, key):
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return {"f": v}
    if isinstance(v, str):
        return v
    if hasattr(v, "tolist"):
        v = v.tolist()
    if isinstance(v, (list, tuple)):
        items = [int(x) if isinstance(x, bool) else x for x in v]
        if all(isinstance(x, int) for x in items):
            return items
        if all(isinstance(x, (int, float)) for x in items):
            return {"fs": [float(x) for x in items]}
    raise KilnTypeError("%s: attribute %s=%r is not a number, a string or a list of numbers" % (op, key, v))


def call_op(op, attrs, args):
    """A call of op (a row of the op table) with attrs (name -> value)."""
    enc = {k: _attr_json(v, op, k) for k, v in attrs.items() if v is not None}
    args = [as_expr(a) for a in args]
    return Call(_api("relay.call")(op, json.dumps(enc), *[a.node for a in args]), args)


__all__ = ["Expr", "Var", "Constant", "Call", "Tuple", "TupleWrapper", "Function", "TensorType",
           "var", "const", "free_vars", "call_op"]
