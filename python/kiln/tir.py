"""TVM's tvm.tir names: scalar expressions, variables and the math
intrinsics (the same objects kiln.te and kiln.expr make).

    n = tir.const(128, "int32")
    x = tir.var("x", "float32")
    y = tir.exp(x) + tir.sqrt(x)
"""
import sys

from . import te as _te
from .expr import (Expr, IterVar, Var, IntImm, FloatImm, StringImm, Call, Reduce,  # noqa: F401
                   Stmt, CommReducer, Range, const, var, size_var)
from .te import (if_then_else, select, all, any, max_value, min_value, floordiv, floormod,  # noqa: F401
                 truncdiv, truncmod, indexdiv, indexmod, cast, comm_reducer)  # pylint: disable=redefined-builtin


PrimExpr = Expr


def SizeVar(name="size", dtype="int32"):  # pylint: disable=invalid-name
    return size_var(name, dtype)


for _n in _te.INTRINSICS + ["abs", "power"]:
    setattr(sys.modules[__name__], _n, getattr(_te, _n))
del _n
