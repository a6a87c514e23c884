"""tvm.contrib.debugger.debug_runtime (TVM's old name): see kiln.debug_executor."""
from ...debug_executor import create, from_module, GraphModuleDebug, ProfileReport  # noqa: F401
