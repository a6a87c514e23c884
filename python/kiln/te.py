"""Tensor expressions (TVM's tvm.te / the old top-level tvm API).

    A = te.placeholder((m,), name="A")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((m, p), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)

compute inspects the lambda for its arguments, makes one axis variable per
dimension named after them (te.axis_vars), calls it, and hands the body to
te.compute.  The math intrinsics (exp, log, sqrt, tanh, sigmoid, ...) are
made from the C side's list (ir.Intrinsics), so every intrinsic the IR knows
is here.
"""
import inspect
import sys

from . import _ffi
from .expr import (Expr, IterVar, Var, Range, CommReducer, const, var, size_var, as_expr)  # noqa: F401
from .object import as_list
from .schedule import create_schedule  # noqa: F401
from .tensor import Tensor, Operation  # noqa: F401


def _api(name):
    return _ffi._get_api(name)


def placeholder(shape, dtype=None, name="placeholder"):
    """An input tensor."""
    shape = tuple(shape) if isinstance(shape, (list, tuple)) else (shape,)
    return _api("te.placeholder")(name, dtype or "float32", *shape)


def _arg_names(fcompute, ndim):
    try:
        sig = inspect.signature(fcompute)
    except (TypeError, ValueError):
        return [None] * ndim
    names, varargs = [], False
    for p in sig.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            if p.default is p.empty:
                names.append(p.name)
        elif p.kind == p.VAR_POSITIONAL:
            varargs = True
    if varargs and len(names) <= ndim:
        names += [None] * (ndim - len(names))
    if len(names) != ndim:
        raise _ffi.KilnError("compute: the function takes %d arguments but the shape has %d "
                             "dimensions" % (len(names), ndim))
    return names


def compute(shape, fcompute, name="compute", tag="", attrs=None):
    """A tensor of the given shape whose element at (i, j, ...) is
    fcompute(i, j, ...)."""
    if attrs:
        raise _ffi.KilnError("compute: attrs are not supported")
    shape = tuple(shape) if isinstance(shape, (list, tuple)) else (shape,)
    if not callable(fcompute):
        raise _ffi.KilnTypeError("compute: fcompute must be callable, got %s" % type(fcompute).__name__)
    names = _arg_names(fcompute, len(shape))
    axis_vars = _api("te.axis_vars")(len(shape), *names)
    body = fcompute(*list(axis_vars))
    if isinstance(body, (list, tuple)):
        if len(body) != 1:
            raise _ffi.KilnError("compute: operations with several outputs are not supported")
        body = body[0]
    return _api("te.compute")(name, tag or None, list(shape), axis_vars, body)


def reduce_axis(dom, name="rv"):
    """A reduction axis over dom = (min, max) (max exclusive) or a Range."""
    if isinstance(dom, Range):
        lo, extent = dom.min, dom.extent
    elif isinstance(dom, (list, tuple)) and len(dom) == 2:
        lo, hi = dom
        extent = hi - lo if isinstance(lo, int) and isinstance(hi, int) else _sub(hi, lo)
    else:
        raise _ffi.KilnTypeError("reduce_axis: dom must be (min, max), got %r" % (dom,))
    return _api("te.reduce_axis")(lo, extent, name)


def _sub(a, b):
    if isinstance(b, int) and b == 0:
        return a
    return _api("ir.BinaryOp")("sub", a, b)


def thread_axis(dom=None, tag="", name=""):
    """A thread axis to bind to: thread_axis("threadIdx.x")."""
    if isinstance(dom, str):
        dom, tag = None, dom
    if not tag:
        raise _ffi.KilnError("thread_axis: a tag such as 'threadIdx.x' is needed")
    extent = None
    if isinstance(dom, (list, tuple)):
        extent = _sub(dom[1], dom[0]) if not isinstance(dom[0], int) or dom[0] else dom[1]
    return _api("te.thread_axis")(tag, extent)


# ---- reductions ----


def _is_axis_arg(axis):
    return isinstance(axis, (IterVar, list, tuple))


def _builtin_reducer(kind, binop):
    def reducer(expr, axis=None, where=None, *args):
        if _is_axis_arg(axis):
            if args:
                raise _ffi.KilnError("%s: unexpected extra arguments" % kind)
            axes = as_list(axis)
            return _api("ir.Reduce")(kind, expr, where, *axes)
        if axis is None:
            raise _ffi.KilnError("%s: give the reduce axis (axis=k or axis=[k1, k2])" % kind)
        # te.max(a, b): the element-wise form
        res = _api("ir.BinaryOp")(binop, expr, axis)
        for x in ([where] if where is not None else []) + list(args):
            res = _api("ir.BinaryOp")(binop, res, x)
        return res

    reducer.__name__ = kind
    reducer.__doc__ = ("%s(expr, axis, where=None): the %s of expr over the reduce axes; with "
                       "two expressions, the element-wise %s." % (kind, kind, binop))
    return reducer


sum = _builtin_reducer("sum", "add")  # pylint: disable=redefined-builtin
prod = _builtin_reducer("prod", "mul")
max = _builtin_reducer("max", "max")  # pylint: disable=redefined-builtin
min = _builtin_reducer("min", "min")  # pylint: disable=redefined-builtin


def comm_reducer(fcombine, fidentity, name="reduce"):
    """A custom commutative reducer: fcombine(x, y) combines two values,
    fidentity(dtype) gives the starting value.  Returns a function used like
    te.sum: reducer(expr, axis=k, where=None)."""

    def reducer(expr, axis=None, where=None, *args):
        if _is_axis_arg(axis):
            expr = as_expr(expr)
            dtype = expr.dtype
            try:
                params = list(inspect.signature(fcombine).parameters)[:2]
            except (TypeError, ValueError):
                params = []
            if len(params) != 2:
                params = ["x", "y"]
            lhs, rhs = var(params[0], dtype), var(params[1], dtype)
            result = fcombine(lhs, rhs)
            identity = fidentity(dtype)
            red = _api("ir.CommReducer")(lhs, rhs, result, identity)
            return _api("ir.Reduce")(red, expr, where, *as_list(axis))
        if axis is None:
            raise _ffi.KilnError("%s: give the reduce axis (axis=k)" % name)
        res = fcombine(expr, axis)
        for x in ([where] if where is not None else []) + list(args):
            res = fcombine(res, x)
        return res

    reducer.__name__ = name
    return reducer


# ---- other expression helpers ----


def max_value(dtype):
    return _api("ir.MaxValue")(dtype)


def min_value(dtype):
    return _api("ir.MinValue")(dtype)


def if_then_else(cond, t, f):
    return _api("ir.Select")(cond, t, f)


select = if_then_else


def all(*conds):  # pylint: disable=redefined-builtin
    if len(conds) == 1 and isinstance(conds[0], (list, tuple)):
        conds = conds[0]
    if not conds:
        raise _ffi.KilnError("all: no conditions")
    res = conds[0]
    for c in conds[1:]:
        res = _api("ir.BinaryOp")("and", res, c)
    return res


def any(*conds):  # pylint: disable=redefined-builtin
    if len(conds) == 1 and isinstance(conds[0], (list, tuple)):
        conds = conds[0]
    if not conds:
        raise _ffi.KilnError("any: no conditions")
    res = conds[0]
    for c in conds[1:]:
        res = _api("ir.BinaryOp")("or", res, c)
    return res


def floordiv(a, b):
    return _api("ir.BinaryOp")("floordiv", a, b)


def floormod(a, b):
    return _api("ir.BinaryOp")("floormod", a, b)


def truncdiv(a, b):
    return _api("ir.BinaryOp")("div", a, b)


def truncmod(a, b):
    return _api("ir.BinaryOp")("mod", a, b)


div = truncdiv
indexdiv = floordiv
indexmod = floormod


def cast(value, dtype):
    return _api("ir.Cast")(dtype, value)


def _make_intrinsic(iname, nargs):
    def f(*args):
        if len(args) != nargs:
            raise _ffi.KilnTypeError("%s takes %d argument%s, got %d"
                                     % (iname, nargs, "" if nargs == 1 else "s", len(args)))
        return _api("ir.Call")(iname, *args)

    f.__name__ = iname
    f.__doc__ = "The %s intrinsic (%d argument%s)." % (iname, nargs, "" if nargs == 1 else "s")
    return f


INTRINSICS = []
for _line in _api("ir.Intrinsics")().split("\n"):
    _n, _, _k = _line.partition(":")
    setattr(sys.modules[__name__], _n, _make_intrinsic(_n, int(_k)))
    INTRINSICS.append(_n)
del _line, _n, _k

abs = sys.modules[__name__].fabs  # pylint: disable=redefined-builtin,no-member
power = sys.modules[__name__].pow  # pylint: disable=no-member
