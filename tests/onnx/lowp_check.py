"""The low-precision ONNX types through Kiln against ONNX's reference.

Run by the venv's Python (build/onnx-venv: the newest onnx, whose
reference implementation converts with ml_dtypes), from
tests/onnx/test_lowp.py:  lowp_check.py KILN WORKDIR SEED

On fresh random inputs (seeded by SEED, printed so a failure can be
repeated) it builds models of Cast, CastLike, QuantizeLinear and
DequantizeLinear to and from bfloat16, the four float8 types, float4 E2M1
and int4/uint4/int2/uint2, computes their outputs with
onnx.reference.ReferenceEvaluator, compiles and runs them with the kiln
CLI and compares every output bit for bit (NaNs: any NaN code).  The
inputs mix values across each type's range, exact ties between two
neighbouring codes (round to nearest even), values past the largest
finite one (saturation or Inf/NaN), +-0, +-Inf and NaN.  Kiln hands a
low-precision output over in its carrier type (bits in uint8/uint16,
int4/int2 values in int8/uint8).  Exits 1 on the first mismatch.
"""
import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto as TP, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

KILN, WORK, SEED = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = np.random.default_rng(SEED)
OPSET = 25
FLOATS = {TP.BFLOAT16: ml_dtypes.bfloat16, TP.FLOAT8E4M3FN: ml_dtypes.float8_e4m3fn,
          TP.FLOAT8E4M3FNUZ: ml_dtypes.float8_e4m3fnuz, TP.FLOAT8E5M2: ml_dtypes.float8_e5m2,
          TP.FLOAT8E5M2FNUZ: ml_dtypes.float8_e5m2fnuz, TP.FLOAT4E2M1: ml_dtypes.float4_e2m1fn}
INTS = {TP.INT4: ml_dtypes.int4, TP.UINT4: ml_dtypes.uint4, TP.INT2: ml_dtypes.int2, TP.UINT2: ml_dtypes.uint2}
NAME = {c: TP.DataType.Name(c) for c in list(FLOATS) + list(INTS)}
N = 4096


def codes_of(t):
    """Every code of a float type as the type (of bfloat16 a random 4096
    of its 65536)."""
    bits = 16 if t == TP.BFLOAT16 else 4 if t == TP.FLOAT4E2M1 else 8
    u = np.arange(1 << bits) if bits <= 8 else rng.integers(0, 1 << 16, N)
    return u.astype(np.uint16 if bits == 16 else np.uint8).view(FLOATS[t])


def float_inputs(types):
    """float32 values that probe every target type: random magnitudes over
    each type's range, exact ties between neighbouring codes, overflow,
    specials."""
    parts = [np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e30, -1e30, 1e-30, -1e-30], np.float32)]
    for t in types:
        if t in FLOATS:
            fi = ml_dtypes.finfo(FLOATS[t])
            lo, hi = np.log2(float(fi.smallest_subnormal)) - 2, np.log2(float(fi.max)) + 1
            mag = np.exp2(rng.uniform(lo, hi, 300)).astype(np.float32)
            parts.append(mag * rng.choice([-1, 1], 300).astype(np.float32))
            v = np.sort(np.unique(codes_of(t).astype(np.float32)))
            v = v[np.isfinite(v)]
            ties = ((v[:-1].astype(np.float64) + v[1:]) / 2).astype(np.float32)
            parts.append(rng.choice(ties, min(200, ties.size)))
            parts.append(np.float32([float(fi.max) * 1.0625, float(fi.max) * 1.03, -float(fi.max) * 1.2]))
        else:
            ii = ml_dtypes.iinfo(INTS[t])
            parts.append(rng.uniform(ii.min - 0.99, ii.max + 0.99, 100).astype(np.float32))
    x = np.concatenate(parts)
    return x[rng.permutation(x.size)]


def run_kiln(model, inputs, tag):
    d = os.path.join(WORK, tag)
    os.makedirs(d, exist_ok=True)
    mp = os.path.join(d, "model.onnx")
    onnx.save(model, mp)
    argv = [KILN, "run", os.path.join(d, "m.so"), "-o", os.path.join(d, "out.npz")]
    for i, (name, arr) in enumerate(inputs):
        f = os.path.join(d, f"input_{i}.pb")
        with open(f, "wb") as fh:
            fh.write(numpy_helper.from_array(arr, name).SerializeToString())
        argv += ["--inputs", f]
    for cmd in ([KILN, "compile", mp, "-o", os.path.join(d, "m.so")], argv):
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode:
            sys.exit(f"{tag}: {' '.join(cmd[:2])} failed: {p.stderr.strip()}")
    with np.load(os.path.join(d, "out.npz")) as z:
        return [z[k] for k in z.files]


def check(tag, ref, got):
    """got (Kiln's carrier) equals ref (an ml_dtypes or NumPy array) bit
    for bit, any NaN matching any NaN."""
    name = ref.dtype.name
    if ref.dtype.type in FLOATS.values():
        want = "uint16" if ref.dtype.itemsize == 2 else "uint8"
        if got.dtype.name != want:
            sys.exit(f"{tag}: Kiln's output is {got.dtype}, expected the {want} carrier of {name}")
        g = got.view(ref.dtype)
        nan = np.isnan(ref.astype(np.float32))
        same = np.where(nan, np.isnan(g.astype(np.float32)), ref.view(got.dtype) == got)
    elif ref.dtype.type in INTS.values():
        want = "int8" if name.startswith("int") else "uint8"
        if got.dtype.name != want:
            sys.exit(f"{tag}: Kiln's output is {got.dtype}, expected the {want} carrier of {name}")
        same = ref.astype(np.int16) == got.astype(np.int16)
    else:
        if got.dtype != ref.dtype:
            sys.exit(f"{tag}: Kiln's output is {got.dtype}, expected {ref.dtype}")
        same = ((ref == got) & (np.signbit(ref) == np.signbit(got))) | (np.isnan(ref) & np.isnan(got))
    if not same.all():
        i = int(np.argmin(same.ravel()))
        sys.exit(f"{tag}: {int((~same).sum())}/{same.size} values differ, e.g. element {i}: Kiln "
                 f"{got.ravel()[i]!r} ({got.ravel()[i].astype(np.float32)!r}), reference {ref.ravel()[i]!r}")
    print(f"ok {tag}: {same.size} values")


def model_of(nodes, inputs, outputs):
    g = helper.make_graph(nodes, "lowp", inputs, outputs)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])


def to_lowp(src):
    """float32 (or float16) -> every type, saturate 1 and 0 for float8."""
    targets = list(FLOATS) + list(INTS)
    x = float_inputs(targets)
    if src == TP.FLOAT16:
        with np.errstate(over="ignore"):
            x = x.astype(np.float16)
    nodes, outs = [], []
    for t in targets:
        for sat in ((1, 0) if t in FLOATS and t not in (TP.BFLOAT16, TP.FLOAT4E2M1) else (1,)):
            o = f"y_{NAME[t]}_{sat}"
            nodes.append(helper.make_node("Cast", ["x"], [o], to=t, saturate=sat))
            outs.append(helper.make_tensor_value_info(o, t, [x.size]))
    m = model_of(nodes, [helper.make_tensor_value_info("x", src, [x.size])], outs)
    refs = ReferenceEvaluator(m).run(None, {"x": x})
    for o, r, g in zip(outs, refs, run_kiln(m, [("x", x)], f"cast_from_{TP.DataType.Name(src)}")):
        check(f"Cast {TP.DataType.Name(src)} -> {o.name}", r, g)


def from_lowp(dst):
    """every type -> float32 / float16 (all codes of the 8- and 4-bit
    types), and CastLike float8 E4M3FN -> E5M2 (decode, then encode)."""
    ins, nodes, outs, feeds = [], [], [], {}
    for t in list(FLOATS) + list(INTS):
        v = codes_of(t) if t in FLOATS else np.arange(ml_dtypes.iinfo(INTS[t]).min,
                                                     ml_dtypes.iinfo(INTS[t]).max + 1).astype(INTS[t])
        n = f"x_{NAME[t]}"
        feeds[n] = v
        ins.append(helper.make_tensor_value_info(n, t, [v.size]))
        nodes.append(helper.make_node("Cast", [n], [f"y_{NAME[t]}"], to=dst))
        outs.append(helper.make_tensor_value_info(f"y_{NAME[t]}", dst, [v.size]))
    like = np.zeros(1, ml_dtypes.float8_e5m2)
    feeds["like"] = like
    ins.append(helper.make_tensor_value_info("like", TP.FLOAT8E5M2, [1]))
    nodes.append(helper.make_node("CastLike", ["x_FLOAT8E4M3FN", "like"], ["y_like"], saturate=0))
    outs.append(helper.make_tensor_value_info("y_like", TP.FLOAT8E5M2, [256]))
    m = model_of(nodes, ins, outs)
    refs = ReferenceEvaluator(m).run(None, feeds)
    got = run_kiln(m, [(i.name, feeds[i.name]) for i in ins], f"cast_to_{TP.DataType.Name(dst)}")
    for o, r, g in zip(outs, refs, got):
        check(f"Cast {o.name} -> {TP.DataType.Name(dst)}", r, g)


def quantize():
    """QuantizeLinear to float8/float4/int4/uint4/int2 (per tensor, with a
    zero point) and DequantizeLinear back (per axis for int4)."""
    x = (rng.standard_normal((8, 64)) * rng.uniform(0.5, 40)).astype(np.float32)
    # saturation.  Not NaN or Inf: the reference quantizes to the integer
    # types with rint(x).astype(int32) + zero point, so -Inf wraps around
    # int32 to the top of the range (Kiln saturates it to the bottom, as
    # the spec says) and NaN is NumPy's undefined conversion.
    x.ravel()[:4] = [-1e6, 3e4, -3e4, 1e6]
    scale = np.float32(rng.uniform(0.05, 2))
    ins = [helper.make_tensor_value_info("x", TP.FLOAT, list(x.shape))]
    feeds, nodes, outs, inits = {"x": x}, [], [], [helper.make_tensor("s", TP.FLOAT, [], [scale])]
    zps = {TP.FLOAT8E4M3FN: 0, TP.FLOAT8E5M2: 0, TP.FLOAT4E2M1: 0, TP.INT4: int(rng.integers(-3, 3)),
           TP.UINT4: int(rng.integers(0, 9)), TP.INT2: 0, TP.UINT2: 1}
    for t, z in zps.items():
        zn = f"z_{NAME[t]}"
        inits.append(helper.make_tensor(zn, t, [], [z]))
        q = f"q_{NAME[t]}"
        nodes.append(helper.make_node("QuantizeLinear", ["x", "s", zn], [q]))
        outs.append(helper.make_tensor_value_info(q, t, list(x.shape)))
        nodes.append(helper.make_node("DequantizeLinear", [q, "s", zn], [f"d_{NAME[t]}"]))
        outs.append(helper.make_tensor_value_info(f"d_{NAME[t]}", TP.FLOAT, list(x.shape)))
    # DequantizeLinear of int4 per axis (a fed input)
    q4 = rng.integers(-8, 8, (8, 64)).astype(ml_dtypes.int4)
    s4 = rng.uniform(0.1, 3, 8).astype(np.float32)
    feeds["q4"] = q4
    ins.append(helper.make_tensor_value_info("q4", TP.INT4, [8, 64]))
    inits.append(numpy_helper.from_array(s4, "s4"))
    nodes.append(helper.make_node("DequantizeLinear", ["q4", "s4"], ["d4"], axis=0))
    outs.append(helper.make_tensor_value_info("d4", TP.FLOAT, [8, 64]))
    g = helper.make_graph(nodes, "q", ins, outs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
    refs = ReferenceEvaluator(m).run(None, feeds)
    got = run_kiln(m, [(i.name, feeds[i.name]) for i in ins], "quantize")
    for o, r, gg in zip(outs, refs, got):
        check(f"{o.name}", r, gg)


def bf16_arithmetic():
    """Ops on bfloat16 (computed in float32, each op's result rounded to
    bfloat16): within 2 bfloat16 ulps of the reference (a sum may round
    the other way)."""
    a = rng.standard_normal((16, 32)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((32, 8)).astype(ml_dtypes.bfloat16)
    nodes = [helper.make_node("MatMul", ["a", "b"], ["mm"]), helper.make_node("Relu", ["mm"], ["r"]),
             helper.make_node("Sigmoid", ["mm"], ["sm"]), helper.make_node("Mul", ["a", "a"], ["sq"]),
             helper.make_node("ReduceSum", ["a"], ["rs"], keepdims=0)]
    ins = [helper.make_tensor_value_info("a", TP.BFLOAT16, [16, 32]),
           helper.make_tensor_value_info("b", TP.BFLOAT16, [32, 8])]
    outs = [helper.make_tensor_value_info(n, TP.BFLOAT16, None) for n in ("r", "sm", "sq", "rs")]
    m = model_of(nodes, ins, outs)
    refs = ReferenceEvaluator(m).run(None, {"a": a, "b": b})
    # the reference sums 512 values in bfloat16 (NumPy on ml_dtypes); Kiln
    # sums in float32: compared with the float32 sum rounded to bfloat16
    refs[3] = np.asarray(a.astype(np.float32).sum(), np.float32).astype(ml_dtypes.bfloat16)
    got = run_kiln(m, [("a", a), ("b", b)], "bf16_arith")
    for o, r, g in zip(outs, refs, got):
        if g.dtype != np.uint16:
            sys.exit(f"bfloat16 {o.name}: Kiln's output is {g.dtype}, expected the uint16 carrier")
        gf, rf = g.view(ml_dtypes.bfloat16).astype(np.float32), np.asarray(r).astype(np.float32)
        if not np.allclose(gf, rf, rtol=2.0 ** -6, atol=1e-6):
            i = int(np.argmax(np.abs(gf - rf)))
            sys.exit(f"bfloat16 {o.name}: Kiln {gf.ravel()[i]} reference {rf.ravel()[i]}")
        print(f"ok bfloat16 {o.name}: {gf.size} values, max relative error "
              f"{float(np.max(np.abs(gf - rf) / np.maximum(np.abs(rf), 1e-6))):.2g}")


print(f"seed {SEED}")
bf16_arithmetic()
to_lowp(TP.FLOAT)
to_lowp(TP.FLOAT16)
from_lowp(TP.FLOAT)
from_lowp(TP.FLOAT16)
quantize()
