"""Generated kernels whose own bodies call Kiln's exponential (kiln_vmath.h:
a conv with a SiLU epilogue) are defined with KILN_VM_KERNEL, GCC's
no-move-loop-invariants for that function only (codegen_c_intrin.c,
docs/vmath.md), in module units and in standalone C (--emit c) alike; the
other kernels of the unit (a conv with ReLU, a max pool) are not, and no
unit carries a unit-wide optimize pragma.  With --precision bf16 the
kernels with bfloat16 dot-accumulate loops do not get it (their loops ran
slower without the pass; built for -mcpu=znver5, whose VDPBF16PS form has them)."""
import glob
import os
import re

import numpy as np
import pytest

from e2e_common import cpu_has_bf16, kiln

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

ATTR = "KILN_VM_KERNEL "
DEF = re.compile(r"^(KILN_VM_KERNEL )?(?:static int|int32_t) (\w+)\([^;]*\{\n(.*?)^\}\n", re.M | re.S)
VMATH = re.compile(r"\bkiln_(?:vm_\w+|expf|tanhf|erff|sigmoidf)\(")
HELPER = re.compile(r"^static inline \w+ (\w+)\([^;]*?\{\n(.*?)^\}\n", re.M | re.S)


def _vmath_calls(sources):
    """a pattern for calls into kiln_vmath.h, directly or through a lane helper"""
    names = [m.group(1) for src in sources for m in HELPER.finditer(src) if VMATH.search(m.group(2))]
    return re.compile(VMATH.pattern[:-3] + "".join("|" + re.escape(n[len("kiln_"):]) for n in names) + r")\(")


def _model(path):
    """conv + SiLU -> max pool -> conv + ReLU"""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((64, 32, 1, 1)).astype(np.float32), "w")
    w2 = numpy_helper.from_array(rng.standard_normal((32, 64, 3, 3)).astype(np.float32), "w2")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Sigmoid", ["c"], ["s"]),
             helper.make_node("Mul", ["c", "s"], ["a"]),
             helper.make_node("MaxPool", ["a"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p", "w2"], ["c2"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c2"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 28, 28])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 14, 14])], [w, w2])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


def _sources(tmp_path, *extra):
    model, out = str(tmp_path / "m.onnx"), tmp_path / f"out{len(extra)}"
    _model(model)
    if "c" in extra:
        kiln("compile", model, "-o", str(out), "--quiet-fallback", *extra)
    else:
        kiln("compile", model, "-o", str(out) + ".so", "--emit-dir", str(out), "--quiet-fallback", *extra)
    return [open(p, encoding="utf-8").read() for p in glob.glob(str(out / "*.c"))]


def _functions(sources):
    """(attribute?, name, calls kiln_vmath?, body) of every generated function"""
    vmath = _vmath_calls(sources)
    return [(bool(m.group(1)), m.group(2), bool(vmath.search(m.group(3))), m.group(3))
            for src in sources for m in DEF.finditer(src)]


def _check(sources):
    assert not any("#pragma GCC optimize" in src for src in sources)
    fns = _functions(sources)
    assert any(vm for _, _, vm, _ in fns), [n for _, n, _, _ in fns]
    assert any(not vm for _, _, vm, _ in fns), [n for _, n, _, _ in fns]
    for attr, name, vm, _ in fns:
        assert attr == vm, (name, attr, vm)


def test_attribute_on_the_vmath_kernels_only(tmp_path):
    _check(_sources(tmp_path))


def test_attribute_in_standalone_c(tmp_path):
    _check(_sources(tmp_path, "--emit", "c"))


@pytest.mark.skipif(not cpu_has_bf16(), reason="this CPU lacks AVX512-BF16")
def test_no_attribute_on_bf16_kernels(tmp_path):
    # a CPU whose VDPBF16PS outruns its FMA (Zen 5), so that the kernels take
    # the vdpbf16ps form whatever this machine is (a Xeon's fma form has no
    # dot-accumulate loop to check)
    fns = _functions(_sources(tmp_path, "--precision", "bf16", "--target", "llvm -mcpu=znver5"))
    bf16 = [(attr, name) for attr, name, _, body in fns if "kiln_bf16_dot_acc" in body]
    assert bf16 and not any(attr for attr, _ in bf16), bf16
    assert all(attr == vm for attr, _, vm, body in fns if "kiln_bf16_dot_acc" not in body)
