"""TVM's relay names over Kiln's model flow, so a Relay script runs with
``import kiln.relay as relay``:

    mod, params = relay.frontend.from_onnx(onnx_model, shape_dict)
    with relay.build_config(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
        intrp = relay.build_module.create_executor("graph", mod, kiln.cpu(), "llvm")
        y = intrp.evaluate()(x, **params)

Graphs are built from Python as in Relay (relay/expr.py, relay/op.py):

    data = relay.var("data", shape=(1, 3, 32, 32))
    w = relay.var("w", shape=(8, 3, 3, 3))
    y = relay.nn.relu(relay.nn.conv2d(data, w, padding=(1, 1), channels=8, kernel_size=(3, 3)))
    mod = kiln.IRModule.from_expr(relay.Function([data, w], y))
    print(mod)          # def @main(%data: Tensor[(1, 3, 32, 32), float32], ...) { ... }
    lib = relay.build(mod, target="llvm", params={"w": weights})

relay.add, relay.nn.conv2d and every other op function are made at import
from Kiln's op table (one per row).  relay.frontend (a subpackage: from
kiln.relay.frontend import from_onnx) holds kiln.frontend's importers,
relay.transform is kiln.transform, relay.build kiln.build of a model, and
relay.save_param_dict / load_param_dict read and write TVM's params blob.
"""
from .. import transform  # noqa: F401
from ..graph import IRModule  # noqa: F401
from ..runtime import save_param_dict, load_param_dict  # noqa: F401
from ..transform import build_config, PassContext  # noqa: F401
from . import frontend  # noqa: F401
from . import build_module  # noqa: F401
from .build_module import build, create_executor, optimize  # noqa: F401
from . import expr  # noqa: F401
from .expr import (Expr, Var, Constant, Call, Tuple, TupleWrapper, Function, TensorType,  # noqa: F401
                   var, const, free_vars)
from . import op as _op

OPS = _op.install(__import__(__name__, fromlist=["_"]))
