"""Kiln: a deep-learning compiler (Python binding over the C API, ctypes).

The names mirror TVM's, so TVM examples run with ``tvm`` replaced by
``kiln`` (and ``tvm.context("cpu", 1)`` by ``kiln.cpu()``):

    import numpy as np
    import kiln

    A = kiln.placeholder((3,), name="A")
    B = kiln.compute((3,), lambda i: A[i] + 2, name="B")
    s = kiln.create_schedule(B.op)
    f = kiln.build(s, [A, B], "cpu", name="mul")
    a = kiln.nd.array(np.zeros(3, A.dtype), kiln.cpu())
    b = kiln.nd.array(np.zeros(3, A.dtype), kiln.cpu())
    f.entry_func(a, b)
    print(b)            # [2. 2. 2.]

A model goes as in TVM's Relay flow (docs/python_model_flow.md):

    mod, params = kiln.frontend.from_onnx("resnet18.onnx", {"data": (1, 3, 224, 224)})
    with kiln.transform.PassContext(opt_level=3):
        lib = kiln.build(mod, target="cpu", params=params)
    m = kiln.graph_executor.GraphModule(lib["default"](kiln.cpu()))
    m.set_input("data", x)
    m.run()
    y = m.get_output(0).numpy()

The library is found through KILN_LIBRARY_PATH, then ../../build next to
this package, then the system.  Every compiler function of the C API is
also bound raw, by prefix, in kiln.capi (kiln.capi.ir.BinaryOp, ...).  IR
objects made from Python live in Kiln's process-default arena until the
process exits.
"""
from . import _ffi
from ._ffi import (KilnError, KilnTypeError, register_func, get_global_func,
                   list_global_func_names, convert_to_func, Function)

capi = _ffi.init_api("kiln.capi")

# pylint: disable=wrong-import-position,redefined-builtin
from . import object as _object  # noqa: E402,F401
from . import expr, tensor, schedule, te, nd, runtime, driver  # noqa: E402
from .expr import Expr, IterVar, Var, const, var  # noqa: E402
from .tensor import Tensor, Operation  # noqa: E402
from .schedule import Schedule, Stage, create_schedule  # noqa: E402
from .te import (placeholder, compute, reduce_axis, thread_axis, comm_reducer, sum, max, min,  # noqa: E402
                 prod, if_then_else, select, all, any, max_value, min_value, floordiv, floormod,
                 truncdiv, truncmod, exp, log, sqrt, rsqrt, tanh, erf, sigmoid, fabs, abs, floor,
                 ceil, round, trunc, power, sin, cos, tan, isnan, isinf)
from .nd import cpu, cuda, gpu, opencl, cl, device, context, Device, NDArray  # noqa: E402
from .driver import lower, build, LoweredFunc  # noqa: E402
from .expr import size_var  # noqa: E402
from .runtime import Module, load_module  # noqa: E402
from . import graph, frontend, transform, graph_executor, debug_executor  # noqa: E402
from . import contrib, relay, autotvm, tir, target, aot  # noqa: E402
from .graph import IRModule  # noqa: E402

__version__ = _ffi.version()
