"""The global function registry from Python: listing, calling C
functions, and Python functions registered and called from C."""
import ctypes

import numpy as np
import pytest

import kiln
from kiln import _ffi


def test_list_and_bind_by_prefix():
    names = kiln.list_global_func_names()
    for n in ["ir.BinaryOp", "te.placeholder", "te.compute", "schedule.split", "driver.build",
              "runtime.module_load", "runtime.module_export", "api.Array"]:
        assert n in names
    assert names == sorted(names)
    # every compiler name is bound under kiln.capi.<prefix>
    assert kiln.capi.ir.BinaryOp.__name__ == "BinaryOp"
    assert "ir.BinaryOp(op, a, b)" in kiln.capi.ir.BinaryOp.__doc__
    assert callable(kiln.capi.schedule.split)
    from kiln.capi import te as capi_te
    assert capi_te.placeholder is kiln.capi.te.placeholder


def test_call_c_functions():
    x = kiln.capi.ir.Var("x", "int64")
    e = kiln.capi.ir.BinaryOp("mul", x, 4)
    assert isinstance(e, kiln.Expr)
    assert e.dtype == "int64"
    assert str(e) == "(x*(int64)4)"
    f = kiln.get_global_func("ir.AsText")
    assert f(e) == str(e)
    assert kiln.capi.api.ObjectKind(e) == "Expr"
    assert kiln.capi.api.TypeKey(e) == "Expr.Mul"
    arr = kiln.capi.api.Array(1, x, None)
    assert len(arr) == 3 and arr[1].same_as(x) and arr[2] is None
    assert kiln.get_global_func("no.such", allow_missing=True) is None
    with pytest.raises(kiln.KilnError, match="cannot find global function no.such"):
        kiln.get_global_func("no.such")


def _c_call(name, values, codes):
    """Look name up and call it the way C does, through ctypes."""
    lib = _ffi._LIB
    h = ctypes.c_void_p()
    assert lib.kiln_func_get_global(name.encode(), ctypes.byref(h)) == 0
    assert h.value
    n = len(values)
    args = (_ffi.KilnValue * max(n, 1))(*values)
    tcodes = (ctypes.c_int * max(n, 1))(*codes)
    ret = _ffi.KilnValue()
    code = ctypes.c_int()
    rc = lib.kiln_func_call(h, args, tcodes, n, ctypes.byref(ret), ctypes.byref(code))
    lib.kiln_func_free(h)
    return rc, ret, code.value


def test_python_function_called_from_c():
    seen = []

    @kiln.register_func("test.py_add")
    def py_add(a, b):
        seen.append((a, b))
        return a + b

    assert "test.py_add" in kiln.list_global_func_names()
    rc, ret, code = _c_call("test.py_add", [_ffi.KilnValue(v_int64=40), _ffi.KilnValue(v_int64=2)],
                            [_ffi.INT, _ffi.INT])
    assert rc == 0 and code == _ffi.INT and ret.v_int64 == 42
    assert seen == [(40, 2)]
    # and from Python through the registry
    assert kiln.get_global_func("test.py_add")(1.5, 2) == 3.5

    # strings come back copied by kiln_func_call
    kiln.register_func("test.py_greet", lambda s: "hello " + s)
    rc, ret, code = _c_call("test.py_greet", [_ffi.KilnValue(v_str=b"kiln")], [_ffi.STR])
    assert rc == 0 and code == _ffi.STR and ret.v_str == b"hello kiln"

    # a Python exception becomes the C error
    def boom(x):
        raise ValueError("bad value %s" % x)

    kiln.register_func("test.py_boom", boom)
    rc, ret, code = _c_call("test.py_boom", [_ffi.KilnValue(v_int64=7)], [_ffi.INT])
    assert rc == -1 and code == _ffi.NULL
    msg = _ffi._LIB.kiln_last_error().decode()
    assert "boom" in msg and "ValueError: bad value 7" in msg
    with pytest.raises(kiln.KilnError, match="bad value 3"):
        kiln.get_global_func("test.py_boom")(3)

    # registering a name twice needs override
    with pytest.raises(kiln.KilnError, match="already registered"):
        kiln.register_func("test.py_add", lambda a, b: 0)
    kiln.register_func("test.py_add", lambda a, b: a * b, override=True)
    assert kiln.get_global_func("test.py_add")(6, 7) == 42


def test_python_callback_with_objects_and_arrays():
    A = kiln.placeholder((4,), name="A")

    @kiln.register_func("test.tensor_name")
    def tensor_name(t):
        return t.name + "!"

    assert kiln.get_global_func("test.tensor_name")(A) == "A!"

    @kiln.register_func("test.double_in_place")
    def double_in_place(arr):
        v = arr.numpy()
        v *= 2
        return arr

    x = np.arange(4, dtype="float32")
    out = kiln.get_global_func("test.double_in_place")(kiln.nd.array(x))
    assert list(x) == [0, 2, 4, 6]
    assert out.numpy().__array_interface__["data"][0] == x.__array_interface__["data"][0]
    # an expression made in the callback comes back as an object
    kiln.register_func("test.make_expr", lambda t: t[0] + 1)
    e = kiln.get_global_func("test.make_expr")(A)
    assert str(e) == "(A[0] + 1f)"


def test_callback_lifetime():
    import gc
    import weakref

    class F:
        def __call__(self, x):
            return x + 1

    f = F()
    ref = weakref.ref(f)
    fn = kiln.convert_to_func(f)
    del f
    gc.collect()
    assert ref() is not None  # the KilnFunction keeps the callable alive
    assert fn(1) == 2
    del fn
    gc.collect()
    assert ref() is None  # the finalizer let it go


def test_borrowed_array_not_usable_after_callback():
    kept = []

    @kiln.register_func("test.keep")
    def keep(arr):
        kept.append(arr)
        return float(arr.numpy().sum())

    assert kiln.get_global_func("test.keep")(np.ones(5, "float32")) == 5.0
    with pytest.raises(kiln.KilnError, match="no longer valid"):
        kept[0].numpy()
    with pytest.raises(kiln.KilnError, match="no longer valid"):
        kiln.get_global_func("test.keep")(kept[0])


def test_scalar_conversions():
    f = kiln.get_global_func("ir.IntImm")
    assert f(np.int64(5)).value == 5
    assert f(np.bool_(True), "bool").value == 1
    assert kiln.get_global_func("ir.FloatImm")(np.float32(0.5)).value == 0.5
    with pytest.raises(kiln.KilnError, match="does not fit in 64 bits"):
        f(1 << 70)
    with pytest.raises(kiln.KilnError, match="does not fit in int8"):
        f(300, "int8")
    x = kiln.var("x")
    assert (x == None) is False  # noqa: E711  (not an expression: identity)
    assert x != "x"


def test_callback_returns_functions_modules_devices():
    kiln.register_func("test.make_adder", lambda n: (lambda x: x + n))
    add5 = kiln.get_global_func("test.make_adder")(5)
    assert isinstance(add5, kiln.Function)
    assert add5(1) == 6

    A = kiln.placeholder((2,), name="A")
    B = kiln.compute((2,), lambda i: A[i] + 1, name="B")
    mod = kiln.build(kiln.create_schedule(B.op), [A, B], name="inc")
    kiln.register_func("test.pass_module", lambda m: m)
    m2 = kiln.get_global_func("test.pass_module")(mod)
    mod.free()  # m2 holds its own reference
    out = np.zeros(2, "float32")
    kiln.get_global_func("runtime.module_get_function")(m2, "inc")(np.ones(2, "float32"), out)
    assert list(out) == [2, 2]
    kiln.register_func("test.device", lambda d: d)
    assert kiln.get_global_func("test.device")(kiln.cpu(0)) == kiln.cpu(0)
    kiln.register_func("test.bytes", lambda b: b + b"!")
    assert kiln.get_global_func("test.bytes")(b"ab\x00c") == b"ab\x00c!"
    assert kiln.get_global_func("test.bytes")(bytearray(b"x")) == b"x!"
