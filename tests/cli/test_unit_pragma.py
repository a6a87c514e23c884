"""The generated C unit of a kernel with Kiln's exponential (a conv with a
SiLU epilogue) starts with GCC's no-move-loop-invariants pragma
(codegen_c_intrin.c, docs/vmath.md); with --precision bf16 the units with
bfloat16 kernels do not (their loops ran slower without the pass), and a
model without an exponential has none."""
import glob
import os

import numpy as np
import pytest

from e2e_common import kiln

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

PRAGMA = '#pragma GCC optimize("no-move-loop-invariants")'


def _model(path, act):
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((64, 32, 1, 1)).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"])]
    if act == "silu":
        nodes += [helper.make_node("Sigmoid", ["c"], ["s"]), helper.make_node("Mul", ["c", "s"], ["y"])]
    else:
        nodes += [helper.make_node("Relu", ["c"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 14, 14])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64, 14, 14])], [w])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


def _units(tmp_path, act, *extra):
    model, out = str(tmp_path / f"{act}.onnx"), tmp_path / f"{act}{len(extra)}"
    _model(model, act)
    kiln("compile", model, "-o", str(out) + ".so", "--emit-dir", str(out), "--quiet-fallback", *extra)
    return {os.path.basename(p): open(p, encoding="utf-8").read() for p in glob.glob(str(out / "*.c"))}


def _cpu_has_bf16():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            return "avx512_bf16" in f.read().split()
    except OSError:
        return False


def test_pragma_where_the_exponential_is(tmp_path):
    units = _units(tmp_path, "silu")
    silu = [src for src in units.values() if "nn_silu" in src]
    assert silu and all(PRAGMA in src for src in silu), list(units)
    assert not any(PRAGMA in src for src in _units(tmp_path, "relu").values())


@pytest.mark.skipif(not _cpu_has_bf16(), reason="this CPU lacks AVX512-BF16")
def test_no_pragma_with_bf16_kernels(tmp_path):
    units = _units(tmp_path, "silu", "--precision", "bf16")
    bf16 = [src for src in units.values() if "kiln_bf16_dot_acc" in src]
    assert bf16 and not any(PRAGMA in src for src in bf16), list(units)
