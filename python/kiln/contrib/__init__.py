"""TVM's tvm.contrib paths: graph_executor (and its old name graph_runtime)
and debugger.debug_executor (debug_runtime), the same classes as
kiln.graph_executor and kiln.debug_executor."""
from . import graph_executor, graph_runtime, debugger  # noqa: F401
