"""8- and 16-bit integer arithmetic wraps to its type, as ONNX (and NumPy)
define Add and Mul on uint8, int8, uint16 and int16 (opset 14): (a + b) * b
cast to float32, one kernel after fusion.  Computed at run time (16-lane
vectors and the scalar tail: 71 values) it matches NumPy, and with both
inputs constants (graph constant folding, topi_eval) it gives the same
values.  C computes narrow integers in int, so before the generated code
cast a narrow result back to its type the scalar values came out unwrapped
(uint8 (200 + 100) * 100 = 30000 instead of 4400) and uint16 products
overflowed int.  OpenCL C promotes the same way: the OpenCL build (where a
device exists) must match too."""
import json
import re

import numpy as np
import pytest

import kiln
from kiln import graph_executor
from e2e_common import nvrtc_or_skip

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

N = 71  # 4 vectors of 16 and a scalar tail of 7

TYPES = [(np.uint8, TensorProto.UINT8), (np.int8, TensorProto.INT8), (np.uint16, TensorProto.UINT16),
         (np.int16, TensorProto.INT16)]


OPENCL = kiln.opencl(0).exist


def _build(tmp_path, np_t, onnx_t, consts, target="cpu"):
    nodes = [helper.make_node("Add", ["a", "b"], ["s"]), helper.make_node("Mul", ["s", "b"], ["p"]),
             helper.make_node("Cast", ["p"], ["y"], to=TensorProto.FLOAT)]
    ins = [] if consts else [helper.make_tensor_value_info(n, onnx_t, [N]) for n in "ab"]
    inits = [numpy_helper.from_array(v, n) for n, v in (consts or {}).items()]
    g = helper.make_graph(nodes, "g", ins, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [N])], inits)
    path = str(tmp_path / ("c.onnx" if consts else "m.onnx"))
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]), path)
    mod, params = kiln.frontend.from_onnx(path, {} if consts else {"a": [N], "b": [N]})
    with kiln.transform.PassContext(opt_level=3):
        lib = kiln.build(mod, target=target, params=params)
    kernels = [n["attrs"]["func_name"] for n in json.loads(lib.get_graph_json())["nodes"] if n["op"] == "tvm_op"]
    dev = kiln.cpu() if target == "cpu" else kiln.opencl(0)
    return kernels, graph_executor.GraphModule(lib["default"](dev))


def _inputs(np_t):
    info = np.iinfo(np_t)
    rng = np.random.default_rng()
    a = rng.integers(info.min, info.max, N, endpoint=True).astype(np_t)
    b = rng.integers(info.min, info.max, N, endpoint=True).astype(np_t)
    a[:4], b[:4] = info.max, info.max  # overflow in every lane group, the tail too
    a[-4:], b[-4:] = info.max, info.min
    with np.errstate(over="ignore"):
        return a, b, ((a + b) * b).astype(np.float32)


@pytest.mark.parametrize("np_t,onnx_t", TYPES, ids=[t[0].__name__ for t in TYPES])
def test_narrow_arithmetic_wraps(tmp_path, np_t, onnx_t):
    a, b, want = _inputs(np_t)
    kernels, m = _build(tmp_path, np_t, onnx_t, None)
    assert len(kernels) == 1, kernels  # add, multiply and cast in one kernel
    m.set_input("a", a)
    m.set_input("b", b)
    m.run()
    got = m.get_output(0).numpy()
    np.testing.assert_array_equal(got, want)
    # both inputs constants: the graph folds at compile time to the same values
    kernels, m = _build(tmp_path, np_t, onnx_t, {"a": a, "b": b})
    assert not kernels, kernels
    m.run()
    np.testing.assert_array_equal(m.get_output(0).numpy(), want)


@pytest.mark.skipif(not OPENCL, reason="no OpenCL device (install pocl-opencl-icd)")
@pytest.mark.parametrize("np_t,onnx_t", TYPES, ids=[t[0].__name__ for t in TYPES])
def test_narrow_arithmetic_wraps_opencl(tmp_path, np_t, onnx_t):
    a, b, want = _inputs(np_t)
    _, m = _build(tmp_path, np_t, onnx_t, None, target="opencl")
    m.set_input("a", a)
    m.set_input("b", b)
    m.run()
    np.testing.assert_array_equal(m.get_output(0).numpy(), want)


# Unary and shift nodes wrap too: uint8 ~200 is 55 (int: -201), uint8
# 200 << 1 is 144 (int: 400), int8 |-128| stays -128 (NumPy, ONNX Abs), one
# fused kernel each with a cast to float32 after it.
UNARY = [("BitwiseNot", np.uint8, TensorProto.UINT8), ("BitwiseNot", np.uint16, TensorProto.UINT16),
         ("BitwiseNot", np.int8, TensorProto.INT8), ("BitShift", np.uint8, TensorProto.UINT8),
         ("BitShift", np.uint16, TensorProto.UINT16), ("Abs", np.int8, TensorProto.INT8),
         ("Abs", np.int16, TensorProto.INT16)]


def _build_unary(tmp_path, op, onnx_t, target):
    ins = ["a", "s"] if op == "BitShift" else ["a"]
    extra = {"direction": "LEFT"} if op == "BitShift" else {}
    nodes = [helper.make_node(op, ins, ["n"], **extra), helper.make_node("Cast", ["n"], ["y"], to=TensorProto.FLOAT)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, onnx_t, [N]) for n in ins],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [N])])
    path = str(tmp_path / "u.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), path)
    mod, params = kiln.frontend.from_onnx(path, {n: [N] for n in ins})
    with kiln.transform.PassContext(opt_level=3):
        lib = kiln.build(mod, target=target, params=params)
    kernels = [n["attrs"]["func_name"] for n in json.loads(lib.get_graph_json())["nodes"] if n["op"] == "tvm_op"]
    dev = kiln.cpu() if target == "cpu" else kiln.opencl(0)
    return kernels, graph_executor.GraphModule(lib["default"](dev))


def _check_unary(tmp_path, op, np_t, onnx_t, target):
    info = np.iinfo(np_t)
    a = np.random.default_rng().integers(info.min, info.max, N, endpoint=True).astype(np_t)
    a[:4], a[-4:] = info.max, info.min  # lane groups and the tail at both ends
    a[4:8], a[-8:-4] = info.max // 2 + 3, info.max // 2 + 3  # a shift by one overflows
    s = np.ones(N, np_t)
    with np.errstate(over="ignore"):
        want = {"BitwiseNot": lambda: ~a, "BitShift": lambda: a << s, "Abs": lambda: np.abs(a)}[op]()
    kernels, m = _build_unary(tmp_path, op, onnx_t, target)
    if target == "cpu":
        assert len(kernels) == 1, kernels
    m.set_input("a", a)
    if op == "BitShift":
        m.set_input("s", s)
    m.run()
    np.testing.assert_array_equal(m.get_output(0).numpy(), want.astype(np_t).astype(np.float32))


@pytest.mark.parametrize("op,np_t,onnx_t", UNARY, ids=[f"{u[0]}-{u[1].__name__}" for u in UNARY])
def test_narrow_unary_wraps(tmp_path, op, np_t, onnx_t):
    _check_unary(tmp_path, op, np_t, onnx_t, "cpu")


@pytest.mark.skipif(not OPENCL, reason="no OpenCL device (install pocl-opencl-icd)")
@pytest.mark.parametrize("op,np_t,onnx_t", UNARY, ids=[f"{u[0]}-{u[1].__name__}" for u in UNARY])
def test_narrow_unary_wraps_opencl(tmp_path, op, np_t, onnx_t):
    _check_unary(tmp_path, op, np_t, onnx_t, "opencl")


# A signed left shift (ONNX BitShift takes int8-int64 from opset 28) moves
# bits into and past the sign bit, and those past it are dropped: NumPy's
# int8 -3 << 1 is -6, 100 << 1 is -56, int32 2**30 << 2 is 0.  C's << of a
# negative value, or into the sign bit of int, is undefined, so the
# generated code shifts the unsigned type of the same width and converts
# back; compiled with -fsanitize=shift a shift in int reports itself on
# stderr.
SIGNED = [(np.int8, TensorProto.INT8), (np.int16, TensorProto.INT16), (np.int32, TensorProto.INT32),
          (np.int64, TensorProto.INT64)]


def _shift(tmp_path, np_t, onnx_t, target):
    """A signed BitShift LEFT built for target, and inputs with negative
    values, values shifted into the sign bit and shifts by 1 and bits - 1."""
    info = np.iinfo(np_t)
    bits = np.dtype(np_t).itemsize * 8
    rng = np.random.default_rng(5)
    a = rng.integers(info.min, info.max, N, endpoint=True).astype(np_t)
    a[:4], a[-4:] = info.min, -3
    a[4:8] = info.max // 2 + 3  # into the sign bit
    s = rng.integers(0, bits, N).astype(np_t)
    s[:8], s[-4:] = 1, bits - 1
    nodes = [helper.make_node("BitShift", ["a", "s"], ["y"], direction="LEFT")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, onnx_t, [N]) for n in "as"],
                          [helper.make_tensor_value_info("y", onnx_t, [N])])
    path = str(tmp_path / "s.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 28)]), path)
    mod, params = kiln.frontend.from_onnx(path, {"a": [N], "s": [N]})
    with kiln.transform.PassContext(opt_level=3):
        return kiln.build(mod, target=target, params=params), a, s


def _run_shift(lib, dev, a, s):
    m = graph_executor.GraphModule(lib["default"](dev))
    m.set_input("a", a)
    m.set_input("s", s)
    m.run()
    np.testing.assert_array_equal(m.get_output(0).numpy(), np.left_shift(a, s))


def _assert_unsigned_shifts(src, wide):
    """Every << of the kernel source shifts a value cast to wide, the
    unsigned type of 32 or 64 bits (the old printer shifted the signed
    value: "(p2[i] << ...)")."""
    cast = re.findall(r"\(([a-z ]+)\)[\w\[\].]+ << ", src)
    assert cast and len(cast) == src.count("<<") and set(cast) == {wide}, src


@pytest.mark.parametrize("np_t,onnx_t", SIGNED, ids=[t[0].__name__ for t in SIGNED])
def test_signed_left_shift_wraps(tmp_path, capfd, monkeypatch, np_t, onnx_t):
    monkeypatch.setenv("KILN_CFLAGS", "-O3 -march=native -fno-math-errno -fno-trapping-math -fPIC -std=gnu11 "
                       "-fsanitize=shift")
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path / "cache"))
    lib, a, s = _shift(tmp_path, np_t, onnx_t, "cpu")
    _run_shift(lib, kiln.cpu(), a, s)
    err = capfd.readouterr().err
    assert "runtime error" not in err, err


# OpenCL C and CUDA leave the same shifts undefined: their printers share
# the C printer's rule.  POCL computes the old signed shifts right as well,
# so the source is checked besides the values.
@pytest.mark.skipif(not OPENCL, reason="no OpenCL device (install pocl-opencl-icd)")
@pytest.mark.parametrize("np_t,onnx_t", SIGNED, ids=[t[0].__name__ for t in SIGNED])
def test_signed_left_shift_wraps_opencl(tmp_path, np_t, onnx_t):
    lib, a, s = _shift(tmp_path, np_t, onnx_t, "opencl")
    _assert_unsigned_shifts(lib.get_source("cl"), "ulong" if np_t == np.int64 else "uint")
    _run_shift(lib, kiln.opencl(0), a, s)


@pytest.mark.parametrize("np_t,onnx_t", SIGNED, ids=[t[0].__name__ for t in SIGNED])
def test_signed_left_shift_cuda_source(tmp_path, np_t, onnx_t):
    lib, _, _ = nvrtc_or_skip(lambda: _shift(tmp_path, np_t, onnx_t, "cuda -arch=sm_90"))
    src = lib.get_source("cuda")
    _assert_unsigned_shifts(src, "unsigned long long" if np_t == np.int64 else "unsigned int")
    log = kiln._ffi._get_api("driver.nvrtc_compile")(src, "sm_90", 0)
    assert "warning" not in log.lower(), log
