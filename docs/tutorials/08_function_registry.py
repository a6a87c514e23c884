"""Tutorial 8 (Python): the global function registry, the bridge between
Python and C (the seeds' Python和C++之间函数调用的实现.md).

Run from the repository root after building:
    PYTHONPATH=python /usr/bin/python3 docs/tutorials/08_function_registry.py
"""
import ctypes

import numpy as np

import kiln
from kiln import _ffi

# 1. Every compiler and runtime entry point is a named packed function.
names = kiln.list_global_func_names()
print(sorted({n.split(".")[0] for n in names}))
print([n for n in names if n.startswith("graph.")][:4])

# 2. Python calls C by name: get_global_func, or kiln.capi bound by prefix.
as_text = kiln.get_global_func("ir.AsText")
e = kiln.capi.ir.BinaryOp("mul", kiln.capi.ir.Var("x", "int32"), 4)
print(as_text(e), kiln.capi.api.TypeKey(e))

# The model flow through the raw registry: the calls kiln.frontend.from_onnx
# and kiln.build make underneath (and examples/compile_model.c makes in C).
graph = kiln.get_global_func("graph.from_onnx")("models/digits/digits.onnx", "image:[1,1,8,8]")
module = kiln.get_global_func("graph.build")(graph, 3, "cpu")
print(type(module).__name__, module.function_names[:2])
m = kiln.graph_executor.GraphModule(module["default"](kiln.cpu()))
m.set_input("image", np.load("models/digits/heldout_0.npy"))
m.run()
print("class", m.get_output(0).numpy().argmax())


# 3. C calls Python: a Python function registered under a name is found by
#    any C code with kiln_func_get_global and called with kiln_func_call.
@kiln.register_func("tutorial.scale")
def scale(x, factor):
    return x * factor


print(kiln.get_global_func("tutorial.scale")(21, 2))  # Python -> C -> Python

lib = _ffi._LIB  # libkiln, called here through ctypes exactly as C calls it
f = ctypes.c_void_p()
lib.kiln_func_get_global(b"tutorial.scale", ctypes.byref(f))
args = (_ffi.KilnValue * 2)(_ffi.KilnValue(v_float64=1.5), _ffi.KilnValue(v_int64=4))
codes = (ctypes.c_int * 2)(_ffi.FLOAT, _ffi.INT)
ret, ret_code = _ffi.KilnValue(), ctypes.c_int()
rc = lib.kiln_func_call(f, args, codes, 2, ctypes.byref(ret), ctypes.byref(ret_code))
print("kiln_func_call returned", rc, "type code", ret_code.value, "value", ret.v_float64)
lib.kiln_func_free(f)

# A Python exception travels back to C as the error message (the exception
# and the last lines of its traceback).
f = kiln.get_global_func("tutorial.scale")
rc = lib.kiln_func_call(f.handle, args, codes, 1, ctypes.byref(ret), ctypes.byref(ret_code))
print("kiln_func_call returned", rc)
print(lib.kiln_last_error().decode().splitlines()[0])
