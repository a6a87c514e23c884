"""TVM's relay names over Kiln's model flow, so a Relay script runs with
``import kiln.relay as relay``:

    mod, params = relay.frontend.from_onnx(onnx_model, shape_dict)
    with relay.build_config(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
        intrp = relay.build_module.create_executor("graph", mod, kiln.cpu(), "llvm")
        y = intrp.evaluate()(x, **params)

relay.frontend (a subpackage: from kiln.relay.frontend import from_onnx)
holds kiln.frontend's importers, relay.transform is kiln.transform, and
relay.build kiln.build of a model.
"""
from .. import transform  # noqa: F401
from . import frontend  # noqa: F401
from ..graph import IRModule  # noqa: F401
from ..transform import build_config, PassContext  # noqa: F401
from . import build_module  # noqa: F401
from .build_module import build, create_executor, optimize  # noqa: F401
