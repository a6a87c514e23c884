"""tvm.contrib.graph_executor: see kiln.graph_executor."""
from ..graph_executor import (GraphModule, create, BenchmarkResult,  # noqa: F401
                              GraphExecutorFactoryModule, ExecutorModule)
