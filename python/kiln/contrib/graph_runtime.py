"""tvm.contrib.graph_runtime (TVM's old name): see kiln.graph_executor."""
from ..graph_executor import (GraphModule, create, BenchmarkResult,  # noqa: F401
                              GraphExecutorFactoryModule, ExecutorModule)
