"""TopK against NumPy's stable argsort (ONNX: ties to the lower index) on
rows full of ties: the heap the CPU runs (n log k) at sizes a pairwise
ranking (n^2 comparisons) could not reach, k = n (a whole stable sort),
int32 and the smallest, and the ranking compute OpenCL targets take (run
on pocl).  tests/onnx/test_frontend.py has the first TopK cases."""
import os
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_frontend import compile_run, save_model, vi  # noqa: E402
from test_scatter import compile_run_opencl  # noqa: E402

RNG = np.random.default_rng(5)


def reference(x, k, axis, largest):
    order = np.argsort(-x if largest else x, axis=axis, kind="stable")
    i = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(x, i, axis=axis), i


def run_topk(tmp_path, x, k, axis, largest, opencl=False):
    tp = TensorProto.FLOAT if x.dtype == np.float32 else TensorProto.INT32
    model = save_model(tmp_path, [helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=axis, largest=largest)],
                       [vi("x", tp, list(x.shape))], [vi("v", tp, None), vi("i", TensorProto.INT64, None)],
                       inits=[numpy_helper.from_array(np.array([k], dtype=np.int64), "k")])
    return (compile_run_opencl if opencl else compile_run)(tmp_path, model, [("x", x)])


@pytest.mark.parametrize("shape,axis,k,largest,dtype", [
    ((2, 200000), 1, 100000, 1, np.float32),  # 4e10 pairwise comparisons
    ((3, 50000), 1, 50000, 0, np.float32),    # k = n: a stable sort of 50,000 with ties
    ((1000, 3, 64), 0, 17, 1, np.int32),      # the axis moved last, int32
    ((4, 7, 1), 1, 7, 0, np.float32),
])
def test_topk_heap(tmp_path, shape, axis, k, largest, dtype):
    x = RNG.integers(-20, 20, shape).astype(dtype)  # 40 values: ties everywhere
    v, i = run_topk(tmp_path, x, k, axis, largest)
    ref_v, ref_i = reference(x, k, axis, largest)
    np.testing.assert_array_equal(i, ref_i)
    np.testing.assert_array_equal(v, ref_v)


@pytest.mark.parametrize("shape,axis,k,largest", [((5, 40), 1, 7, 1), ((33, 4), 0, 33, 0), ((2, 3, 9), -1, 4, 1)])
def test_topk_opencl(tmp_path, shape, axis, k, largest):
    x = RNG.integers(-3, 4, shape).astype(np.float32)
    v, i = run_topk(tmp_path, x, k, axis, largest, opencl=True)
    ref_v, ref_i = reference(x, k, axis, largest)
    np.testing.assert_array_equal(i, ref_i)
    np.testing.assert_array_equal(v, ref_v)
