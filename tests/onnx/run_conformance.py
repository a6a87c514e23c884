#!/usr/bin/python3
"""ONNX conformance runner: ONNX's own node and simple test cases through Kiln.

Generates ONNX's backend test data once into a cache folder (default
build/onnx-node-tests; `onnx.backend.test.cmd_tools generate-data`), then
for every case of node/ and simple/: `kiln compile` its model.onnx (symbolic
or missing input dimensions bound from the test data's shapes with
--input-shapes), `kiln run` the module on each test_data_set's input_*.pb in
order, and compares every output with the matching output_*.pb the way ONNX's
backend runner does: same dtype, same shape, numpy.testing.assert_allclose
with rtol 1e-3 and atol 1e-7 (NaNs equal; float16 outputs within 4 float16
ulps, rtol 2^-8: see RTOL_F16).  Cases run in parallel (-j, two
by default), each with a time limit.

Each case is classified:
  pass         every output of every data set matched;
  fail         Kiln compiled it but got a wrong answer, crashed, timed out,
               or stopped with an error that is not a clear "unsupported";
  unsupported  Kiln refused the model with a clear message that an operator,
               attribute value, data type or value kind is not supported.

A case whose ONNX 1.12 model contradicts its own reference outputs (a known
upstream bug, fixed in later ONNX releases) runs with that upstream fix
applied; the report lists it.

Where Kiln needs an input's value at compile time (a Reshape's shape, a
Tile's repeats fed as a graph input) it says so ("must be known at compile
time"); the runner then binds that input to its test value with
`kiln compile --bind NAME=FILE.pb`, as a user of a static-shape compiler
would, and the case is marked as such in the report.  That is not how a
user runs a model (compiled once, every input given at run time), so the
report counts every suite twice: as run, and without binding, where a case
that needed a bound input counts as unsupported with Kiln's reason.  With
--no-bind the runner binds nothing: every graph input stays an input, and
such a case is "unsupported" (the two counts are then the same).

Prints a table per operator (a case counts under the operator its test name
names, e.g. test_reduce_sum_keepdims_random -> ReduceSum) and the totals,
and writes the same table plus every failing and unsupported case with its
one-line reason to a Markdown report (default build/onnx_conformance.md).
Exits 1 when any case fails, so the suite stays green only when every case
Kiln accepts gives the right answer.

Two suites:
  debian   (default) Debian's onnx 1.12 (/usr/bin/python3): its `node` and
           `simple` cases, generated with onnx's `generate-data`;
  newest   the node cases of the newest onnx release, which ships the case
           definitions but not their data: the runner collects them with
           onnx.backend.test.case.node.collect_testcases and writes each
           case's model.onnx and test_data_set_*/{input,output}_*.pb.  It
           must run under a Python with that onnx: tests/onnx/newest_suite.sh
           makes the venv build/onnx-venv (onnx and numpy from PyPI, the
           versions pinned there) and runs this script with it.

Usage:  /usr/bin/python3 tests/onnx/run_conformance.py [--suite debian] [-j 2]
        [-k PATTERN] [--kiln build/kiln] [--cache DIR] [--report FILE]
        [--timeout 120] [--keep] [--no-bind]
        bash tests/onnx/newest_suite.sh [the same options]   (--suite newest)
"""
import argparse
import collections
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RTOL, ATOL = 1e-3, 1e-7
# float16 outputs: rtol 1e-3 is one float16 ulp, while ONNX's reference
# rounds every op's result to float16 and Kiln's fused kernels round once
# per kernel (the C compiler keeps a fused expression in float32); a chain
# of ops legitimately ends a few ulps apart, so float16 outputs are
# compared within 4 ulps (2^-8 relative).
RTOL_F16 = 2.0 ** -8
# bfloat16 outputs (Kiln computes bfloat16 ops in float32 and rounds each
# op's result, as the reference does; sums may round the other way):
# within 2 bfloat16 ulps (2^-6 relative).  bfloat16 conversions are checked
# bit for bit by tests/onnx/test_lowp.py.
RTOL_BF16 = 2.0 ** -6
# the folders of each suite's cache that hold cases
SUITES = {"debian": ("node", "simple"), "newest": ("node",)}

# A compile error is "unsupported" when Kiln's message says so plainly.
UNSUPPORTED_RE = re.compile(r"unsupported|not supported|no Kiln equivalent", re.I)
# Kiln names the graph inputs a compile-time value is computed from.
BIND_RE = re.compile(r"must be known at compile time.*computed from the graph input\(s\) ((?:'[^']*'(?:, )?)+)")

# Kiln refuses a value given at run time that the compiled model cannot take.
RUNTIME_VALUE_RE = re.compile(r"set_input '([^']*)': element \d+ is .*given at run time")

# Test-name prefixes that do not spell their operator's name.
ALIASES = {
    "batchnorm": "BatchNormalization",
    "instancenorm": "InstanceNormalization",
    "mvn": "MeanVarianceNormalization",
    "sce": "SoftmaxCrossEntropyLoss",
    "nllloss": "NegativeLogLikelihoodLoss",
    "less_equal": "LessOrEqual",
    "greater_equal": "GreaterOrEqual",
    "strnorm": "StringNormalizer",
    "basic_conv": "Conv",
    "conv_with": "Conv",
    "basic_deform_conv": "DeformConv",
    "globalaveragepool": "GlobalAveragePool",
    "reversesequence": "ReverseSequence",
    "logsoftmax": "LogSoftmax",
    "quantizelinear": "QuantizeLinear",
}


def _fix_adam_multiple(model):
    from onnx import helper
    model.graph.node[0].attribute.append(helper.make_attribute("epsilon", 1e-2))


def _fix_castlike_like_shape(model):
    like = next(i for i in model.graph.input if i.name == "like")
    dims = like.type.tensor_type.shape.dim
    del dims[:]
    dims.add().dim_value = 1


_LIKE_FIX = ("the model declares input 'like' as [3, 4] while its data is [1] (the newer onnx case declares "
             "no fixed shape)", _fix_castlike_like_shape)


# Cases whose ONNX 1.12 model disagrees with its own reference outputs; the
# runner applies the fix ONNX made upstream and says so in the report.
UPSTREAM_FIXES = {
    "test_adam_multiple": ("the model lacks the epsilon = 1e-2 its reference outputs were computed with "
                           "(onnx/onnx#7749, fixed by #7763)", _fix_adam_multiple),
    **{f"test_castlike_{case}": _LIKE_FIX for case in
       ("BFLOAT16_to_FLOAT", "BFLOAT16_to_FLOAT_expanded", "FLOAT_to_BFLOAT16", "FLOAT_to_BFLOAT16_expanded")},
}


# The upstream fixes that concern onnx 1.12's cases only (the newer cases
# are already fixed: onnx 1.23's Adam model has its epsilon, and adding it
# again would give the node the attribute twice, which the importer refuses).
DEBIAN_ONLY_FIXES = {"test_adam_multiple"} | {f"test_castlike_{case}" for case in
                                              ("BFLOAT16_to_FLOAT", "BFLOAT16_to_FLOAT_expanded", "FLOAT_to_BFLOAT16",
                                               "FLOAT_to_BFLOAT16_expanded")}


def upstream_fix(case, suite):
    """Whether the case runs with an upstream fix applied (suite: debian or newest)."""
    return case.name in UPSTREAM_FIXES and (suite == "debian" or case.name not in DEBIAN_ONLY_FIXES)


def generate(cache, suite):
    """Write the suite's test cases into cache (once)."""
    if all(os.path.isdir(os.path.join(cache, s)) for s in SUITES[suite]):
        return
    if suite == "newest":
        return generate_newest(cache)
    print(f"generating ONNX backend test data into {cache} ...", flush=True)
    os.makedirs(cache, exist_ok=True)
    # onnx 1.12's generators still use NumPy aliases removed in NumPy 1.24.
    code = ("import numpy as np\n"
            "for a, b in [('float', float), ('int', int), ('bool', bool), ('object', object),"
            " ('complex', complex), ('str', str)]:\n"
            "    setattr(np, a, b)\n"
            "import sys\n"
            f"sys.argv = ['x', 'generate-data', '-o', {cache!r}]\n"
            "from onnx.backend.test.cmd_tools import main\n"
            "main()\n")
    subprocess.run([sys.executable, "-c", code], check=True, stdout=subprocess.DEVNULL)


def _proto_of(value, vi, name):
    """A test value as the protobuf its graph input/output type wants."""
    from onnx import TensorProto, numpy_helper
    t = vi.type
    if t.HasField("sequence_type"):
        return numpy_helper.from_list(value, name)
    if t.HasField("optional_type"):
        return numpy_helper.from_optional(value, name)
    if t.HasField("map_type"):
        return numpy_helper.from_dict(value, name)
    if isinstance(value, TensorProto):
        return value
    return numpy_helper.from_array(value, name)


def generate_newest(cache):
    """The newest onnx's node cases: collect_testcases() builds each case's
    model and data in memory; write them in the layout generate-data uses
    (one folder a case, model.onnx, test_data_set_N/input_K.pb ...).  The
    cases are written to a temporary folder renamed into place, so an
    interrupted run does not leave half a suite behind."""
    import onnx
    from onnx.backend.test.case import node
    print(f"collecting onnx {onnx.__version__} node test cases into {cache} ...", flush=True)
    os.makedirs(cache, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="node.", dir=cache)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = node.collect_testcases()
    for case in cases:
        d = os.path.join(tmp, case.name)
        os.makedirs(d)
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        g = case.model.graph
        for i, (inputs, outputs) in enumerate(case.data_sets):
            ds = os.path.join(d, f"test_data_set_{i}")
            os.makedirs(ds)
            for kind, values, vis in (("input", inputs, g.input), ("output", outputs, g.output)):
                for j, v in enumerate(values):
                    with open(os.path.join(ds, f"{kind}_{j}.pb"), "wb") as f:
                        f.write(_proto_of(v, vis[j], vis[j].name).SerializeToString())
    os.rename(tmp, os.path.join(cache, "node"))


def bf16_round_bits(x):
    """float32 -> bfloat16 bits, rounding to nearest even (NaN stays NaN)."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(x), np.uint16(0x7FC0), r)


# Cases whose onnx 1.12 reference outputs break the spec they test: the
# runner compares with the output the spec gives, computed here from the
# case's inputs (the report lists them).
REFERENCE_FIXES = {
    name: ("onnx 1.12's reference truncates float to bfloat16; the spec rounds to nearest even (as the newest "
           "onnx's reference does, whose case Kiln passes too): compared with the rounded inputs", lambda ins: [bf16_round_bits(ins[0])])
    for name in ("test_cast_FLOAT_to_BFLOAT16", "test_castlike_FLOAT_to_BFLOAT16",
                 "test_castlike_FLOAT_to_BFLOAT16_expanded")
}


def load_tensor(path):
    import onnx
    from onnx import numpy_helper
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def load_value(path, vi):
    """A test value file as the list of arrays Kiln binds or gives for it
    (docs/sequences.md): a tensor [array]; a sequence its elements; an
    optional [] when empty, else what it holds; None when the type is
    none of these (a map)."""
    import onnx
    from onnx import numpy_helper
    t = vi.type
    if t.HasField("sequence_type"):
        p = onnx.SequenceProto()
        with open(path, "rb") as f:
            p.ParseFromString(f.read())
        return [np.asarray(a) for a in numpy_helper.to_list(p)]
    if t.HasField("optional_type"):
        p = onnx.OptionalProto()
        with open(path, "rb") as f:
            p.ParseFromString(f.read())
        v = numpy_helper.to_optional(p)
        if v is None:
            return []
        return [np.asarray(a) for a in v] if isinstance(v, list) else [np.asarray(v)]
    if t.HasField("tensor_type"):
        return [load_tensor(path)]
    return None


def structure_shapes(path, vi):
    """--input-shapes entries for a sequence or optional input from its
    test value: "x:seq(N)" and each element's shape, or "x:none"."""
    vals = load_value(path, vi)
    opt = vi.type.HasField("optional_type")
    holds_seq = vi.type.HasField("sequence_type") or (opt and vi.type.optional_type.elem_type.HasField("sequence_type"))
    if opt and not vals and not holds_seq:
        return [(vi.name, "none")]
    if opt and not holds_seq:
        return [(vi.name, "[" + ",".join(map(str, vals[0].shape)) + "]")]
    if opt and vals == []:  # an empty optional of a sequence, or an empty sequence in it
        import onnx
        p = onnx.OptionalProto()
        with open(path, "rb") as f:
            p.ParseFromString(f.read())
        if not p.HasField("sequence_value"):
            return [(vi.name, "none")]
    return [(vi.name, f"seq({len(vals)})")] + [(f"{vi.name}[{i}]", "[" + ",".join(map(str, a.shape)) + "]")
                                               for i, a in enumerate(vals)]


def compact(s):
    return s.replace("_", "").lower()


_SCHEMAS = None


def schema_names():
    global _SCHEMAS
    if _SCHEMAS is None:
        import onnx.defs
        _SCHEMAS = sorted({s.name for s in onnx.defs.get_all_schemas_with_history() if s.domain in ("", "ai.onnx")},
                          key=len, reverse=True)
    return _SCHEMAS


def test_op(name, model_ops):
    """The operator a test is about, from its name and its model's ops."""
    base = name[len("test_"):] if name.startswith("test_") else name
    for prefix, op in sorted(ALIASES.items(), key=lambda kv: -len(kv[0])):
        if base.startswith(prefix):
            return op
    c = compact(base)
    if base.endswith("_expanded"):  # a function op, replaced in the model by its body
        for op in schema_names():
            if c.startswith(op.lower()):
                return op
    hits = [op for op in set(model_ops) if c.startswith(op.lower())]
    if hits:
        return max(hits, key=len)
    if len(set(model_ops)) == 1:
        return model_ops[0]
    for op in schema_names():
        if c.startswith(op.lower()):
            return op
    return model_ops[0] if model_ops else "(none)"


class Case:
    def __init__(self, suite, name, path):
        self.suite, self.name, self.path = suite, name, path
        self.status, self.reason, self.op, self.ops = None, "", "", []
        self.bound = []  # inputs bound to their test values at compile time
        self.needs_bind = []  # --no-bind: the inputs Kiln asked for at compile time
        self.random = False  # compared by support: it draws random numbers
        self.seconds = 0.0


def graph_ops(graph):
    ops = []
    for n in graph.node:
        ops.append(n.op_type)
        for a in n.attribute:
            for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                ops += graph_ops(g)
    return ops


def first_line(text, cmd):
    """Kiln's own error line from stderr (not the C compiler's chatter)."""
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    for l in lines:
        if l.startswith(f"kiln {cmd}:"):
            return l[len(f"kiln {cmd}:"):].strip()
    return lines[-1] if lines else ""


def run_proc(argv, timeout, env):
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout, env=env)
        return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired:
        return None, "", f"timed out after {timeout} s"


def describe_rc(rc):
    if rc is None:
        return "timeout"
    if rc < 0:
        import signal
        try:
            return f"crashed ({signal.Signals(-rc).name})"
        except ValueError:
            return f"crashed (signal {-rc})"
    return f"exit {rc}"


# Cases whose reference holds float32 rounding noise where the exact result
# is zero, next to values of tens: an absolute tolerance of 1e-7 then
# compares noise with noise.  Compared with the atol given here (still
# below 1e-6 of the output's largest value); the report lists them.
ATOL_OVERRIDES = {
    "test_dft_inverse": (1e-5, "an inverse DFT of values up to 99: the reference's zeros are float32 noise "
                               "of 1.9e-7 (the output's largest value is 54)"),
    "test_dft_inverse_opset19": (1e-5, "the same case at opset 19"),
}


# The low-precision types NumPy lacks (ml_dtypes names them): Kiln hands
# them over in a carrier type (docs/onnx_opsets.md, src/frontend/onnx/
# ops/lowp.c): bfloat16/float8/float4 as their bits in uint16/uint8 (a
# float4 in the low 4 bits), int4/int2 as int8 values, uint4/uint2 as
# uint8 values.  The comparison takes Kiln's output as the reference's
# type from exactly that carrier and nothing else.
LOWP_CARRIERS = {
    "bfloat16": ("uint16", "bits"), "float8_e4m3fn": ("uint8", "bits"), "float8_e4m3fnuz": ("uint8", "bits"),
    "float8_e5m2": ("uint8", "bits"), "float8_e5m2fnuz": ("uint8", "bits"), "float4_e2m1fn": ("uint8", "bits"),
    "float8_e8m0fnu": ("uint8", "bits"),
    "int4": ("int8", "value"), "uint4": ("uint8", "value"), "int2": ("int8", "value"), "uint2": ("uint8", "value"),
}


def from_carrier(ref, got):
    """got (a carrier) as ref's low-precision type; got as is otherwise."""
    c = LOWP_CARRIERS.get(ref.dtype.name)
    if c is None or got.dtype.name != c[0]:
        return got
    return got.view(ref.dtype) if c[1] == "bits" else got.astype(ref.dtype)


# Operators that draw random numbers: ONNX's reference draws with NumPy's
# generator, which no other implementation reproduces, so an output of a
# case using one is compared by its dtype, shape and support (a Bernoulli
# draw is 0 or 1; a training-mode Dropout case, compare_dropout, 0 or
# x / (1 - ratio)); Kiln's generator is checked by its statistics in
# tests/onnx/test_random.py.  The report lists these cases.
RANDOM_OPS = {"RandomUniform", "RandomUniformLike", "RandomNormal", "RandomNormalLike", "Bernoulli", "Multinomial"}


def compare_random(ref, got, k):
    if got.dtype != ref.dtype:
        return f"output {k}: dtype {got.dtype}, expected {ref.dtype}"
    if got.shape != ref.shape:
        return f"output {k}: shape {got.shape}, expected {ref.shape}"
    if not np.isin(ref, [0, 1]).all():
        return f"output {k}: a random output that is not a 0/1 draw: the runner has no check for it"
    bad = ~np.isin(got, [0, 1])
    if bad.any():
        return f"output {k}: {int(bad.sum())} values are not 0 or 1, e.g. {got[bad].ravel()[0]!r}"
    return None


def training_dropout(model, inputs):
    """The ratio of a training-mode Dropout case (its only node, with
    training_mode true), or None."""
    nodes = model.graph.node
    if len(nodes) != 1 or nodes[0].op_type != "Dropout" or len(inputs) < 3 or not bool(np.asarray(inputs[2])):
        return None
    return float(np.asarray(inputs[1])) if len(inputs) > 1 else 0.5


def compare_dropout(x, ratio, refs, got):
    """A training-mode dropout's draw: every output element is 0 or
    x / (1 - ratio), the mask (if asked) marks the kept ones, and dtype
    and shape are the reference's."""
    for k, (r, g) in enumerate(zip(refs, got)):
        if g.dtype != r.dtype or g.shape != r.shape:
            return f"output {k}: {g.dtype}{g.shape}, expected {r.dtype}{r.shape}"
    y = got[0]
    kept = np.isclose(y, x / (1 - ratio), rtol=RTOL, atol=ATOL)
    bad = ~(kept | (y == 0))
    if bad.any():
        return f"output 0: {int(bad.sum())} values are neither 0 nor x / (1 - ratio)"
    if len(got) > 1 and not (got[1].astype(bool) == kept)[x != 0].all():
        return "output 1: the mask does not mark the kept values"
    return None


def bf16_bits_as_f32(a):
    return (a.astype(np.uint32) << 16).view(np.float32)


def compare(ref, got, k, atol=ATOL, bf16=False):
    """None if got matches ref as ONNX's runner requires, else the reason.
    bf16: the model says the output is BFLOAT16 (onnx 1.12 gives its
    reference as the uint16 bits: compared as the values they encode,
    exactly)."""
    if bf16 and ref.dtype == np.uint16 and got.dtype == np.uint16:
        ref, got = bf16_bits_as_f32(ref), bf16_bits_as_f32(got)
        if ref.shape == got.shape and not np.array_equal(ref, got, equal_nan=True):
            bad = ~((ref == got) | (np.isnan(ref) & np.isnan(got)))
            i = np.unravel_index(np.argmax(bad), bad.shape) if bad.ndim else ()
            return (f"output {k}: {int(bad.sum())}/{bad.size} bfloat16 values differ, e.g. at "
                    f"{tuple(int(x) for x in i)} got {got[i]!r} expected {ref[i]!r}")
    if ref.dtype == object or ref.dtype.kind in "US":  # text: Kiln writes NumPy unicode ('<U'), compared exactly
        if got.dtype.kind != "U":
            return f"output {k}: dtype {got.dtype}, expected text"
        if got.shape != ref.shape:
            return f"output {k}: shape {got.shape}, expected {ref.shape}"
        r = np.array([x.decode() if isinstance(x, bytes) else str(x) for x in ref.ravel()], dtype=object)
        g = got.ravel().astype(object)
        bad = [i for i in range(r.size) if r[i] != g[i]]
        if bad:
            return f"output {k}: {len(bad)}/{r.size} strings differ, e.g. at {bad[0]} got {g[bad[0]]!r} expected {r[bad[0]]!r}"
        return None
    got = from_carrier(ref, got)
    rtol = RTOL_F16 if ref.dtype == np.float16 else RTOL
    if ref.dtype.name == "bfloat16":  # computed in float32, rounded per op: within 2 bfloat16 ulps
        if got.dtype != ref.dtype:
            return f"output {k}: dtype {got.dtype}, expected {ref.dtype} (carried in uint16)"
        ref, got = ref.astype(np.float32), got.astype(np.float32)
        rtol = RTOL_BF16
    elif ref.dtype.name in LOWP_CARRIERS:  # conversions: exact (NaNs equal)
        if got.dtype != ref.dtype:
            return f"output {k}: dtype {got.dtype}, expected {ref.dtype} (carried in {LOWP_CARRIERS[ref.dtype.name][0]})"
        ref, got = ref.astype(np.float32), got.astype(np.float32)
        if ref.shape == got.shape and not np.array_equal(ref, got, equal_nan=True):
            bad = ~((ref == got) | (np.isnan(ref) & np.isnan(got)))
            i = np.unravel_index(np.argmax(bad), bad.shape) if bad.ndim else ()
            return (f"output {k}: {int(bad.sum())}/{bad.size} values differ, e.g. at {tuple(int(x) for x in i)} "
                    f"got {got[i]!r} expected {ref[i]!r}")
    if got.dtype != ref.dtype:
        return f"output {k}: dtype {got.dtype}, expected {ref.dtype}"
    if got.shape != ref.shape:
        return f"output {k}: shape {got.shape}, expected {ref.shape}"
    if ref.dtype == object:
        return None if np.array_equal(ref, got) else f"output {k}: values differ"
    try:
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol, equal_nan=True)
    except AssertionError:
        a, b = got.astype(np.float64), ref.astype(np.float64)
        with np.errstate(invalid="ignore"):
            bad = ~(np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True))
        i = np.unravel_index(np.argmax(bad), bad.shape) if bad.ndim else ()
        return (f"output {k}: {int(bad.sum())}/{bad.size} values differ, e.g. at {tuple(int(x) for x in i)} "
                f"got {got[i]!r} expected {ref[i]!r}")
    return None


def run_case(case, args, workroot):
    import onnx
    t0 = time.time()
    env = dict(os.environ)
    env.setdefault("KILN_CFLAGS", "-O1 -march=native -fPIC -std=gnu11")
    env.setdefault("KILN_NUM_THREADS", "1")
    work = tempfile.mkdtemp(prefix=case.name + ".", dir=workroot)
    try:
        model_path = os.path.join(case.path, "model.onnx")
        model = onnx.load(model_path, load_external_data=False)
        if upstream_fix(case, args.suite):
            UPSTREAM_FIXES[case.name][1](model)
            model_path = os.path.join(work, "model.onnx")
            onnx.save(model, model_path)
        case.ops = graph_ops(model.graph)
        case.op = test_op(case.name, case.ops)
        inits = {i.name for i in model.graph.initializer}
        inputs = [vi for vi in model.graph.input if vi.name not in inits]
        sets = sorted(d for d in os.listdir(case.path) if d.startswith("test_data_set_"))
        if not sets:
            case.status, case.reason = "fail", "no test data sets"
            return case
        # group data sets by the input shapes they need bound (one compile each)
        groups = collections.OrderedDict()
        for ds in sets:
            dpath = os.path.join(case.path, ds)
            files = sorted((f for f in os.listdir(dpath) if f.startswith("input_")), key=lambda f: int(f[6:-3]))
            shapes = []
            for i, vi in enumerate(inputs):
                if i < len(files) and (vi.type.HasField("sequence_type") or vi.type.HasField("optional_type")):
                    try:
                        shapes += structure_shapes(os.path.join(dpath, files[i]), vi)
                    except Exception:
                        pass
                    continue
                tt = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
                if tt is None or i >= len(files):
                    continue
                dims = tt.shape.dim if tt.HasField("shape") else None
                if dims is not None and all(d.HasField("dim_value") for d in dims):
                    continue
                try:
                    arr = load_tensor(os.path.join(dpath, files[i]))
                except Exception:
                    continue
                shapes.append((vi.name, "[" + ",".join(map(str, arr.shape)) + "]"))
            groups.setdefault(tuple(shapes), []).append((ds, files))
        work_items = [(sh, mb, {}) for sh, mb in groups.items()]
        so_count = 0
        names = [vi.name for vi in inputs]
        while work_items:
            shapes, members, bind = work_items.pop(0)
            bind = dict(bind)
            split = False
            while True:
                so = os.path.join(work, f"m{so_count}.so")
                so_count += 1
                argv = [args.kiln, "compile", model_path, "-o", so]
                given = [(n, d) for n, d in shapes if n not in bind]  # a bound input needs no shape
                if given:
                    argv += ["--input-shapes", ",".join(f"{n}:{d}" for n, d in given)]
                for name, f in bind.items():
                    argv += ["--bind", f"{name}={f}"]
                rc, out, err = run_proc(argv, args.timeout, env)
                if rc == 0:
                    break
                msg = first_line(err, "compile")
                m = BIND_RE.search(msg) if rc is not None and rc > 0 else None
                want = [w for w in re.findall(r"'([^']*)'", m.group(1)) if w in names and w not in bind] if m else []
                if want and args.no_bind:
                    case.status = "unsupported"
                    case.reason = f"needs input(s) {', '.join(want)} at compile time (--no-bind): {msg}"
                    case.needs_bind = want
                    return case
                if want:
                    if len(members) > 1:  # bound values may differ per data set: one compile each
                        work_items[:0] = [(shapes, [mb], {}) for mb in members]
                        split = True
                        break
                    ds, files = members[0]
                    for w in want:
                        bind[w] = os.path.join(case.path, ds, files[names.index(w)])
                    continue
                if rc is not None and rc > 0 and UNSUPPORTED_RE.search(msg):
                    case.status, case.reason = "unsupported", msg
                else:
                    case.status, case.reason = "fail", f"compile: {describe_rc(rc)}: {msg}"
                return case
            if split:
                continue
            case.bound = sorted(set(case.bound) | set(bind))
            bound_idx = {names.index(b) for b in bind}
            for ds, files in members:
                dpath = os.path.join(case.path, ds)
                npz = os.path.join(work, ds + ".npz")
                argv = [args.kiln, "run", so, "-o", npz]
                for i, f in enumerate(files):
                    if i not in bound_idx:
                        argv += ["--inputs", os.path.join(dpath, f)]
                rc, out, err = run_proc(argv, args.timeout, env)
                if rc != 0:
                    msg = first_line(err, "run")
                    # a value given at run time that the model cannot take: without
                    # --no-bind, compile again for this data set with
                    # that input bound, as for a value needed at compile time
                    m = RUNTIME_VALUE_RE.search(msg) if rc is not None and rc > 0 else None
                    if m and not args.no_bind and m.group(1) in names and m.group(1) not in bind:
                        work_items.insert(0, (shapes, [(ds, files)], {**bind, m.group(1): os.path.join(dpath, files[names.index(m.group(1))])}))
                        members_left = members[[mb[0] for mb in members].index(ds) + 1:]
                        if members_left:
                            work_items.insert(1, (shapes, members_left, bind))
                        break
                    # a value the compiled model cannot take at run time, refused plainly
                    if rc is not None and rc > 0 and UNSUPPORTED_RE.search(msg):
                        case.status, case.reason = "unsupported", f"run {ds}: {msg}"
                    else:
                        case.status, case.reason = "fail", f"run {ds}: {describe_rc(rc)}: {msg}"
                    return case
                with np.load(npz) as z:
                    got = [z[k] for k in z.files]  # in output order, by the model's output names
                refs = sorted((f for f in os.listdir(dpath) if f.startswith("output_")), key=lambda f: int(f[7:-3]))
                # a sequence or optional output: its elements in a row (docs/sequences.md)
                outs_vi = list(model.graph.output)
                ref_vals, ref_bf16 = [], []
                for k, f in enumerate(refs):
                    vi = outs_vi[k] if k < len(outs_vi) else None
                    vals = load_value(os.path.join(dpath, f), vi) if vi is not None else None
                    if vals is None:
                        vals = [load_tensor(os.path.join(dpath, f))]
                    ref_vals += vals
                    ref_bf16 += [vi is not None and vi.type.tensor_type.elem_type == onnx.TensorProto.BFLOAT16] * len(vals)
                if len(got) != len(ref_vals):
                    case.status, case.reason = "fail", f"{ds}: {len(got)} output tensors, expected {len(ref_vals)}"
                    return case
                if case.name in REFERENCE_FIXES and args.suite == "debian":
                    ref_vals = REFERENCE_FIXES[case.name][1]([load_tensor(os.path.join(dpath, f)) for f in files])
                ins = [load_tensor(os.path.join(dpath, f)) for f in files] if "Dropout" in case.ops else []
                ratio = training_dropout(model, ins) if ins else None
                if ratio is not None:
                    case.random = True
                    why = compare_dropout(ins[0], ratio, ref_vals, got)
                    if why:
                        case.status, case.reason = "fail", f"{ds}: {why}"
                        return case
                    continue
                for k in range(len(ref_vals)):
                    atol = ATOL_OVERRIDES[case.name][0] if case.name in ATOL_OVERRIDES else ATOL
                    bf16 = ref_bf16[k]
                    if RANDOM_OPS & set(case.ops):
                        case.random = True
                        why = compare_random(ref_vals[k], got[k], k)
                    else:
                        why = compare(ref_vals[k], got[k], k, atol, bf16)
                    if why:
                        case.status, case.reason = "fail", f"{ds}: {why}"
                        return case
        case.status = "pass"
        return case
    except Exception as e:  # a runner problem must not pass silently
        case.status, case.reason = "fail", f"runner: {type(e).__name__}: {e}"
        return case
    finally:
        case.seconds = time.time() - t0
        if not (args.keep and case.status == "fail"):
            shutil.rmtree(work, ignore_errors=True)


def md_escape(s):
    return s.replace("|", "\\|").replace("\n", " ")


def report(cases, args, wall):
    by_op = collections.defaultdict(collections.Counter)
    for c in cases:
        by_op[c.op][c.status] += 1
    tot = collections.Counter(c.status for c in cases)
    n = len(cases)
    rows = sorted(by_op.items(), key=lambda kv: kv[0].lower())
    w = max([len(op) for op, _ in rows] + [8])
    lines = [f"{'operator':<{w}}  pass  fail  unsup"]
    for op, cnt in rows:
        lines.append(f"{op:<{w}}  {cnt['pass']:4d}  {cnt['fail']:4d}  {cnt['unsupported']:5d}")
    pct = 100.0 * tot["pass"] / n if n else 0.0
    total = (f"total: {n} cases: {tot['pass']} pass ({pct:.1f}%), {tot['fail']} fail, "
             f"{tot['unsupported']} unsupported ({wall:.0f} s, -j {args.jobs})")
    print("\n".join(lines))
    print(total)
    bound = [c for c in cases if c.bound and c.status == "pass"]
    # without binding: a case that passed only with a bound input is unsupported
    nb_pass = tot["pass"] - len(bound)
    nb_pct = 100.0 * nb_pass / n if n else 0.0
    nb_total = (f"without binding: {nb_pass} pass ({nb_pct:.1f}%), {tot['fail']} fail, "
                f"{tot['unsupported'] + len(bound)} unsupported")
    if bound:
        print(f"({len(bound)} passing cases had inputs bound at compile time)")
    print(nb_total)
    md = ["# ONNX conformance", "",
          f"ONNX {onnx_version()} backend test cases ({', '.join(SUITES[args.suite])}) compiled and run by Kiln "
          f"(`tests/onnx/run_conformance.py`).", "",
          f"**{total}**", "",
          f"**{nb_total}** (every graph input given at run time; "
          + ("the runner bound nothing, --no-bind" if args.no_bind else
             "a case listed under \"Passing with inputs bound\" counts as unsupported") + ")", "",
          "| operator | pass | fail | unsupported | pass without binding |", "|---|---:|---:|---:|---:|"]
    nb_op = collections.Counter(c.op for c in cases if c.status == "pass" and not c.bound)
    for op, cnt in rows:
        md.append(f"| {op} | {cnt['pass']} | {cnt['fail']} | {cnt['unsupported']} | {nb_op[op]} |")
    md.append(f"| **total** | **{tot['pass']}** | **{tot['fail']}** | **{tot['unsupported']}** | **{nb_pass}** |")
    for status, title in (("fail", "Failing cases"), ("unsupported", "Unsupported cases")):
        sel = sorted((c for c in cases if c.status == status), key=lambda c: (c.suite, c.name))
        md += ["", f"## {title} ({len(sel)})", ""]
        md += [f"- `{c.suite}/{c.name}` ({c.op}): {md_escape(c.reason)}" for c in sel] or ["none"]
    if bound:
        md += ["", f"## Passing with inputs bound at compile time ({len(bound)})", "",
               "Kiln needs these inputs at compile time (or cannot take the test's value at run time), so the runner bound them to their test values with `kiln compile --bind`.", ""]
        md += [f"- `{c.suite}/{c.name}`: {', '.join(c.bound)}" for c in sorted(bound, key=lambda c: c.name)]
    loose = [c for c in cases if c.name in ATOL_OVERRIDES]
    if loose:
        md += ["", "## Cases compared with a larger absolute tolerance", ""]
        md += [f"- `{c.suite}/{c.name}` (atol {ATOL_OVERRIDES[c.name][0]:g}): {ATOL_OVERRIDES[c.name][1]}" for c in loose]
    rnd = sorted((c for c in cases if c.random and c.status == "pass"), key=lambda c: c.name)
    if rnd:
        md += ["", "## Random cases compared by dtype, shape and support, not values", "",
               "A Bernoulli draw must be 0 or 1; a training-mode Dropout's output 0 or x / (1 - ratio), its mask "
               "marking the kept values.", ""]
        md += [f"- `{c.suite}/{c.name}`" for c in rnd]
    reffixed = [c for c in cases if c.name in REFERENCE_FIXES and args.suite == "debian"]
    if reffixed:
        md += ["", "## Cases compared with the spec's output instead of onnx 1.12's reference", ""]
        md += [f"- `{c.suite}/{c.name}`: {REFERENCE_FIXES[c.name][0]}" for c in reffixed]
    fixed = [c for c in cases if upstream_fix(c, args.suite)]
    if fixed:
        md += ["", "## Cases run with ONNX's upstream fix", ""]
        md += [f"- `{c.suite}/{c.name}`: {UPSTREAM_FIXES[c.name][0]}" for c in fixed]
    slow = sorted(cases, key=lambda c: -c.seconds)[:10]
    md += ["", "## Slowest cases", ""] + [f"- `{c.suite}/{c.name}`: {c.seconds:.1f} s" for c in slow]
    os.makedirs(os.path.dirname(os.path.abspath(args.report)), exist_ok=True)
    with open(args.report, "w") as f:
        f.write("\n".join(md) + "\n")
    print(f"report: {args.report}")
    return tot


def onnx_version():
    import onnx
    return onnx.__version__


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kiln", default=os.path.join(ROOT, "build", "kiln"))
    ap.add_argument("--suite", choices=sorted(SUITES), default="debian",
                    help="debian: onnx 1.12's node and simple cases; newest: the node cases of the onnx this Python has")
    ap.add_argument("--cache", help="the generated cases (default build/onnx-node-tests, "
                    "build/onnx-node-tests-VERSION for --suite newest)")
    ap.add_argument("--report", help="the Markdown report (default build/onnx_conformance.md, "
                    "build/onnx_conformance_newest.md for --suite newest)")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=120, help="seconds per compile or run")
    ap.add_argument("-k", dest="pattern", help="only cases whose name matches this regular expression")
    ap.add_argument("--keep", action="store_true", help="keep the work folders of failing cases")
    ap.add_argument("-v", "--verbose", action="store_true", help="print each case as it finishes")
    ap.add_argument("--no-bind", action="store_true",
                    help="bind no input at compile time: a case whose input Kiln needs at compile time is "
                         "unsupported, with Kiln's reason")
    args = ap.parse_args()
    if not os.access(args.kiln, os.X_OK):
        sys.exit(f"run_conformance: {args.kiln} is not an executable (build Kiln first)")
    if args.suite == "newest":
        import onnx
        if tuple(int(x) for x in onnx.__version__.split(".")[:2]) < (1, 13):
            sys.exit(f"run_conformance: --suite newest needs a recent onnx, {sys.executable} has onnx "
                     f"{onnx.__version__}; run it as bash tests/onnx/newest_suite.sh")
        args.cache = args.cache or os.path.join(ROOT, "build", f"onnx-node-tests-{onnx.__version__}")
        args.report = args.report or os.path.join(ROOT, "build", "onnx_conformance_newest.md")
    else:
        args.cache = args.cache or os.path.join(ROOT, "build", "onnx-node-tests")
        args.report = args.report or os.path.join(ROOT, "build", "onnx_conformance.md")
    generate(args.cache, args.suite)
    cases = []
    for suite in SUITES[args.suite]:
        d = os.path.join(args.cache, suite)
        for name in sorted(os.listdir(d)):
            if args.pattern and not re.search(args.pattern, name):
                continue
            if os.path.isfile(os.path.join(d, name, "model.onnx")):
                cases.append(Case(suite, name, os.path.join(d, name)))
    if not cases:
        sys.exit("run_conformance: no cases selected")
    workroot = tempfile.mkdtemp(prefix="kiln-conformance.")
    t0 = time.time()
    done = 0
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futs = [pool.submit(run_case, c, args, workroot) for c in cases]
            for fut in concurrent.futures.as_completed(futs):
                c = fut.result()
                done += 1
                if args.verbose or c.status == "fail":
                    print(f"[{done}/{len(cases)}] {c.status:11s} {c.suite}/{c.name} ({c.seconds:.1f} s)"
                          + (f": {c.reason}" if c.reason else ""), flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(workroot, ignore_errors=True)
        else:
            print(f"work folders kept in {workroot}")
    tot = report(cases, args, time.time() - t0)
    sys.exit(1 if tot["fail"] else 0)


if __name__ == "__main__":
    main()
