"""tvm.contrib.debugger: see kiln.debug_executor."""
from . import debug_executor, debug_runtime  # noqa: F401
