"""relay.frontend (TVM's tvm.relay.frontend): the model importers, so
``from kiln.relay.frontend import from_onnx`` works as in TVM.  The same
functions as kiln.frontend."""
from ...frontend import from_onnx  # noqa: F401

__all__ = ["from_onnx"]
