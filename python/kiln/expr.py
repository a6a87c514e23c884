"""Expressions with Python operators.

``a + b``, ``A[i] * 2``, ``-x``, ``i < n`` build expression nodes through
ir.BinaryOp; a Python number mixed with an expression takes the
expression's type in C, so ``A[i] + 2`` on a float32 tensor adds 2f.
Division: ``/`` is C division (truncating for integers, as TVM 0.6),
``//`` floor division and ``%`` floor modulo (TVM's rules since 0.7).

``==`` and ``!=`` build EQ / NE nodes too, but such a node remembers its
operands, so ``if a == b:`` and dict lookups ask whether the two are the
same expression (TVM's EqualOp).  Any other expression used as a bool is
an error: Python's ``and``/``or``/``not`` cannot build IR; use ``&``, ``|``,
``~`` or te.all / te.any.
"""
import numbers

from . import _ffi
from .object import Object, register_object


def _api(name):
    return _ffi._get_api(name)


def _binop(op, a, b):
    return _api("ir.BinaryOp")(op, a, b)


class ExprOp:
    """Operators shared by expressions and iteration variables."""

    __slots__ = ()

    def __add__(self, other):
        return _binop("add", self, other)

    def __radd__(self, other):
        return _binop("add", other, self)

    def __sub__(self, other):
        return _binop("sub", self, other)

    def __rsub__(self, other):
        return _binop("sub", other, self)

    def __mul__(self, other):
        return _binop("mul", self, other)

    def __rmul__(self, other):
        return _binop("mul", other, self)

    def __truediv__(self, other):
        return _binop("div", self, other)

    def __rtruediv__(self, other):
        return _binop("div", other, self)

    def __floordiv__(self, other):
        return _binop("floordiv", self, other)

    def __rfloordiv__(self, other):
        return _binop("floordiv", other, self)

    def __mod__(self, other):
        return _binop("floormod", self, other)

    def __rmod__(self, other):
        return _binop("floormod", other, self)

    def __neg__(self):
        return _api("ir.Neg")(self)

    def __pos__(self):
        return self

    def __invert__(self):
        return _api("ir.Not")(self)

    def __and__(self, other):
        return _binop("and", self, other)

    def __rand__(self, other):
        return _binop("and", other, self)

    def __or__(self, other):
        return _binop("or", self, other)

    def __ror__(self, other):
        return _binop("or", other, self)

    def __lt__(self, other):
        return _binop("lt", self, other)

    def __le__(self, other):
        return _binop("le", self, other)

    def __gt__(self, other):
        return _binop("gt", self, other)

    def __ge__(self, other):
        return _binop("ge", self, other)

    def equal(self, other):
        """The EQ expression (also what == builds)."""
        return _binop("eq", self, other)

    def astype(self, dtype):
        return _api("ir.Cast")(dtype, self)


def _comparable(x):
    """Whether == with x builds an expression (else Python's identity)."""
    return isinstance(x, (Expr, IterVar, numbers.Number))


def _same(a, b):
    """Whether two operands of == are the same expression."""
    if isinstance(a, Object) and isinstance(b, Object):
        if a.same_as(b):
            return True
        return bool(_api("ir.StructuralEqual")(a, b))
    if isinstance(a, Object):
        a, b = b, a
    if isinstance(b, ConstExpr) and not isinstance(a, Object):
        return b.value == a
    return a == b


@register_object("Expr")
class Expr(Object, ExprOp):
    """An expression node."""

    __slots__ = ("_cmp",)

    @property
    def dtype(self):
        return _api("ir.ExprDType")(self)

    @property
    def kind(self):
        return _api("ir.ExprKind")(self)

    @property
    def operands(self):
        return list(_api("ir.ExprOperands")(self))

    def __eq__(self, other):
        if not _comparable(other):
            return NotImplemented
        e = _binop("eq", self, other)
        e._cmp = (True, self, other)
        return e

    def __ne__(self, other):
        if not _comparable(other):
            return NotImplemented
        e = _binop("ne", self, other)
        e._cmp = (False, self, other)
        return e

    def __bool__(self):
        cmp = getattr(self, "_cmp", None)
        if cmp is None:
            raise _ffi.KilnTypeError(
                "cannot use the expression %s as a Python bool (use &, |, ~ or te.all / te.any "
                "to combine conditions)" % self)
        want, a, b = cmp
        return _same(a, b) == want

    __nonzero__ = __bool__

    def __hash__(self):
        return hash(self.handle)

    def __int__(self):
        raise _ffi.KilnTypeError("%s is not a constant" % self)

    __index__ = __int__

    def __float__(self):
        raise _ffi.KilnTypeError("%s is not a constant" % self)


class ConstExpr(Expr):
    __slots__ = ()


@register_object("Expr.IntImm")
class IntImm(ConstExpr):
    __slots__ = ()

    @property
    def value(self):
        return _api("ir.ExprIntValue")(self)

    def __int__(self):
        return self.value

    __index__ = __int__

    def __float__(self):
        return float(self.value)

    def __hash__(self):
        return hash(self.handle)


@register_object("Expr.FloatImm")
class FloatImm(ConstExpr):
    __slots__ = ()

    @property
    def value(self):
        return _api("ir.ExprFloatValue")(self)

    def __float__(self):
        return self.value

    def __hash__(self):
        return hash(self.handle)


@register_object("Expr.StrImm")
class StringImm(ConstExpr):
    __slots__ = ()

    @property
    def value(self):
        return _api("ir.ExprStrValue")(self)

    def __hash__(self):
        return hash(self.handle)


@register_object("Expr.Var")
class Var(Expr):
    __slots__ = ()

    @property
    def name(self):
        return _api("ir.VarName")(self)

    def __hash__(self):
        return hash(self.handle)


@register_object("Expr.Call")
class Call(Expr):
    __slots__ = ()

    @property
    def name(self):
        return _api("ir.CallName")(self)

    @property
    def args(self):
        return self.operands

    def __hash__(self):
        return hash(self.handle)


@register_object("Expr.Read")
class TensorRead(Expr):
    """T[i, j] before flattening (TVM's Call of a tensor)."""

    __slots__ = ()

    @property
    def tensor(self):
        return _api("ir.ReadTensor")(self)

    @property
    def indices(self):
        return self.operands

    def __hash__(self):
        return hash(self.handle)


@register_object("Expr.Reduce")
class Reduce(Expr):
    __slots__ = ()

    def __hash__(self):
        return hash(self.handle)


@register_object("Stmt")
class Stmt(Object):
    """A statement (what lower(..., simple_mode=True) returns)."""

    __slots__ = ()


@register_object("Reducer")
class CommReducer(Object):
    __slots__ = ()


@register_object("IterVar")
class IterVar(Object, ExprOp):
    """An iteration variable: an axis of a compute, a reduce axis, a thread
    axis, or an axis made by split / fuse.  Usable in expressions (as its
    variable)."""

    __slots__ = ()

    @property
    def var(self):
        return _api("te.IterVarVar")(self)

    @property
    def name(self):
        return _api("te.IterVarName")(self)

    @property
    def dom(self):
        r = _api("te.IterVarRange")(self)
        return None if r is None else Range(r[0], r[1])

    @property
    def iter_type(self):
        return _api("te.IterVarKind")(self)

    @property
    def thread_tag(self):
        return _api("te.IterVarThreadTag")(self) or ""

    @property
    def dtype(self):
        return self.var.dtype

    # Identity, not an expression: axes are compared and hashed as objects.
    __eq__ = Object.__eq__
    __ne__ = Object.__ne__
    __hash__ = Object.__hash__


class Range:
    """[min, min + extent)."""

    def __init__(self, min_value, extent):
        self.min = min_value
        self.extent = extent

    def __repr__(self):
        return "range(min=%s, ext=%s)" % (self.min, self.extent)


def const(value, dtype=None):
    """A constant: int -> int32 (int64 if it does not fit), float ->
    float32, unless dtype says otherwise."""
    if isinstance(value, bool):
        value = int(value)
        dtype = dtype or "bool"
    if dtype is None:
        if isinstance(value, int):
            dtype = "int32" if -(1 << 31) <= value < (1 << 31) else "int64"
        else:
            dtype = "float32"
    dtype = str(dtype)
    if dtype.startswith("float"):
        return _api("ir.FloatImm")(float(value), dtype)
    if dtype == "bool":
        return _api("ir.IntImm")(int(bool(value)), "bool")
    if isinstance(value, float):
        if value != int(value):
            raise _ffi.KilnError("const: %r is not an integer, but the dtype is %s" % (value, dtype))
        value = int(value)
    return _api("ir.IntImm")(value, dtype)


def var(name="tindex", dtype="int32"):
    return _api("ir.Var")(name, dtype)


def size_var(name="size", dtype="int32"):
    """A variable standing for a size (TVM's SizeVar): Kiln makes a plain
    Var (its simplifier assumes nothing about the sign of any variable)."""
    return _api("ir.Var")(name, dtype)


def as_expr(x):
    """An Expr from an Expr, an IterVar (its var) or a number."""
    if isinstance(x, Expr):
        return x
    if isinstance(x, IterVar):
        return x.var
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return const(x)
    if isinstance(x, bool):
        return const(x, "bool")
    raise _ffi.KilnTypeError("expected an expression, got %s (%r)" % (type(x).__name__, x))
