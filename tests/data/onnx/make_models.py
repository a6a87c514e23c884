#!/usr/bin/python3
"""make_models.py - writes the small ONNX models tests/unit/test_onnx.c loads.

Run with Debian's Python (it has the onnx package): /usr/bin/python3
tests/data/onnx/make_models.py.  The outputs are committed (a few KB in all)
so the C tests need no Python.  Tensors are built field by field rather than
with onnx.helper's conveniences so each model stores its data exactly where
the test expects it (raw_data, float_data, int32_data, ...).  Values are
simple formulas (i * 0.5, i - 3, ...) that the C test recomputes.

Good models: conv_relu, symbolic, external (+ external.bin), attrs,
runtime_values, runtime_float_values, runtime_loop (tests/unit/test_runtime_values.c), sequences
(tests/unit/test_sequences.c); two
TensorProto files: tensor_f32.pb, tensor_i64.pb.
Broken ones, each for one error path: no_graph, no_op_type, bad_size,
neg_dims, neg_value_dim, external_missing, external_range.
"""
import os
import struct

import onnx
from onnx import AttributeProto, GraphProto, TensorProto, TypeProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))


def tensor(name, dtype, dims, field=None, values=(), raw=None):
    """A TensorProto with values in exactly `field` (or raw bytes)."""
    t = TensorProto()
    t.name = name
    t.data_type = dtype
    t.dims.extend(dims)
    if raw is not None:
        t.raw_data = raw
    elif field:
        getattr(t, field).extend(values)
    return t


def model(graph, opsets=(("", 13),), ir_version=8):
    m = helper.make_model(
        graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets],
        producer_name="kiln-tests", producer_version="1.0")
    m.ir_version = ir_version
    return m


def save(m, name):
    path = os.path.join(HERE, name)
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    return path


def conv_relu():
    # W: float [4,3,3,3] in raw_data, value i * 0.5
    w = struct.pack("<108f", *[i * 0.5 for i in range(108)])
    W = tensor("W", TensorProto.FLOAT, [4, 3, 3, 3], raw=w)
    # B: float [4] in float_data, value i - 1.5
    B = tensor("B", TensorProto.FLOAT, [4], "float_data", [i - 1.5 for i in range(4)])
    # shape: int64 [2] in int64_data: (1, -1)
    S = tensor("shape", TensorProto.INT64, [2], "int64_data", [1, -1])
    conv = helper.make_node("Conv", ["x", "W", "B"], ["c"], name="conv0",
                            kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1])
    relu = helper.make_node("Relu", ["c"], ["r"])  # no name: "Relu_1"
    reshape = helper.make_node("Reshape", ["r", "shape"], ["y"], name="flat")
    g = helper.make_graph(
        [conv, relu, reshape], "conv_relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 256])],
        [W, B, S],
        value_info=[helper.make_tensor_value_info("c", TensorProto.FLOAT, [1, 4, 8, 8])])
    m = model(g, opsets=(("", 13), ("ai.onnx.ml", 3)))
    onnx.checker.check_model(m)
    save(m, "conv_relu.onnx")


def symbolic():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", None])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3, "H", None])
    # An output without a shape at all (rank unknown).
    z = helper.make_tensor_value_info("z", TensorProto.INT64, None)
    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu"),
         helper.make_node("Shape", ["x"], ["z"], name="shape")],
        "symbolic", [x], [y, z])
    save(model(g, opsets=(("ai.onnx", 14),)), "symbolic.onnx")


def external():
    # Two tensors in external.bin: A float [2,3] (i + 1) at offset 64 with a
    # length, C int32 [4] (i * 7 - 5) at offset 4096 without one.
    a = struct.pack("<6f", *[i + 1.0 for i in range(6)])
    c = struct.pack("<4i", *[i * 7 - 5 for i in range(4)])
    blob = bytearray(4096 + len(c))
    blob[64:64 + len(a)] = a
    blob[4096:] = c
    with open(os.path.join(HERE, "external.bin"), "wb") as f:
        f.write(blob)

    def ext(name, dtype, dims, entries):
        t = tensor(name, dtype, dims)
        t.data_location = TensorProto.EXTERNAL
        for k, v in entries:
            e = t.external_data.add()
            e.key, e.value = k, v
        return t

    A = ext("A", TensorProto.FLOAT, [2, 3],
            [("location", "external.bin"), ("offset", "64"), ("length", str(len(a)))])
    C = ext("C", TensorProto.INT32, [4], [("location", "external.bin"), ("offset", "4096")])
    g = helper.make_graph(
        [helper.make_node("Add", ["x", "A"], ["y"], name="add")], "external",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], [A, C])
    save(model(g), "external.onnx")

    A = g.initializer[0]  # make_graph copied the tensors
    A.external_data[0].value = "missing.bin"
    save(model(g), "external_missing.onnx")
    A.external_data[0].value = "external.bin"
    A.external_data[1].value = "8192"  # past the end of the 4112-byte file
    save(model(g), "external_range.onnx")


def attrs():
    """One node of a custom op with an attribute of every type, and an If
    whose branches are graphs."""
    then_g = helper.make_graph(
        [helper.make_node("Identity", ["a"], ["t_out"], name="then_id")], "then_branch", [],
        [helper.make_tensor_value_info("t_out", TensorProto.FLOAT, [2])])
    else_g = helper.make_graph(
        [helper.make_node("Neg", ["a"], ["e_out"], name="else_neg")], "else_branch", [],
        [helper.make_tensor_value_info("e_out", TensorProto.FLOAT, [2])])
    # Every typed field, and the int32_data packing of small types.
    tensors = [
        tensor("i8", TensorProto.INT8, [3], "int32_data", [-1, 2, -128]),
        tensor("u8", TensorProto.UINT8, [2], "int32_data", [255, 7]),
        tensor("i16", TensorProto.INT16, [2], "int32_data", [-300, 300]),
        tensor("u16", TensorProto.UINT16, [1], "int32_data", [65535]),
        tensor("b", TensorProto.BOOL, [3], "int32_data", [1, 0, 1]),
        tensor("f16", TensorProto.FLOAT16, [2], "int32_data", [0x3C00, 0xC000]),  # 1.0, -2.0
        tensor("bf16", TensorProto.BFLOAT16, [1], "int32_data", [0x3F80]),  # 1.0
        tensor("i32", TensorProto.INT32, [2], "int32_data", [-7, 123456]),
        tensor("u32", TensorProto.UINT32, [2], "uint64_data", [4000000000, 1]),
        tensor("u64", TensorProto.UINT64, [1], "uint64_data", [2**63 + 5]),
        tensor("f64", TensorProto.DOUBLE, [2], "double_data", [0.25, -1e300]),
        tensor("c64", TensorProto.COMPLEX64, [1], "float_data", [1.5, -2.5]),
        tensor("str", TensorProto.STRING, [2], "string_data", [b"hello", b"a\x00b"]),
        tensor("scalar", TensorProto.INT64, [], "int64_data", [42]),
        tensor("empty", TensorProto.FLOAT, [0, 3]),
    ]
    tp = TypeProto()
    tp.tensor_type.elem_type = TensorProto.FLOAT
    tp.tensor_type.shape.dim.add().dim_value = 5
    seq = TypeProto()
    seq.sequence_type.elem_type.CopyFrom(tp)
    sparse = helper.make_sparse_tensor(
        tensor("sp", TensorProto.FLOAT, [2], "float_data", [3.0, 4.0]),
        tensor("sp_idx", TensorProto.INT64, [2], "int64_data", [1, 5]), [2, 3])
    node = helper.make_node(
        "AllAttrs", ["a"], ["b", ""], name="all", domain="test.kiln",
        f=0.5, i=-3, s="same", t=tensor("tv", TensorProto.FLOAT, [2], "float_data", [1.0, 2.0]),
        g=then_g, floats=[1.0, 2.5], ints=[1, -2, 3], strings=["x", "yz"],
        tensors=tensors, graphs=[then_g, else_g], sparse_tensor=sparse, tp=tp,
        type_protos=[tp, seq])
    node.attribute.add(name="empty_ints", type=AttributeProto.INTS)  # an empty list
    # An attribute written without `type`, as pre-IR-2 files did.
    untyped = node.attribute.add()
    untyped.name = "untyped"
    untyped.i = 9
    if_node = helper.make_node("If", ["cond"], ["z"], name="if0",
                               then_branch=then_g, else_branch=else_g)
    # Optional input omitted in the middle: Clip(x, "", max).
    clip = helper.make_node("Clip", ["a", "", "mx"], ["c"])
    g = helper.make_graph(
        [node, if_node, clip], "attrs",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("mx", TensorProto.FLOAT, [])],
        [helper.make_tensor_value_info("b", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("c", TensorProto.FLOAT, [2]),
         helper.make_tensor_sequence_value_info("unused_seq", TensorProto.FLOAT, [None])])
    save(model(g, opsets=(("", 13), ("test.kiln", 1))), "attrs.onnx")


def broken():
    m = onnx.ModelProto()
    m.ir_version = 8
    m.opset_import.add().version = 13
    save(m, "no_graph.onnx")

    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="ok"),
         helper.make_node("", ["y"], ["z"], name="anonymous_op")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2])])
    save(model(g), "no_op_type.onnx")

    bad = tensor("W_bad", TensorProto.FLOAT, [2, 3], raw=b"\0" * 20)  # 20 bytes, not 24
    g = helper.make_graph([], "g", [], [helper.make_tensor_value_info("W_bad", TensorProto.FLOAT, [2, 3])],
                          [bad])
    save(model(g), "bad_size.onnx")

    neg = tensor("W_neg", TensorProto.FLOAT, [-2, 3], "float_data", [])
    g = helper.make_graph([], "g", [], [helper.make_tensor_value_info("W_neg", TensorProto.FLOAT, [2, 3])],
                          [neg])
    save(model(g), "neg_dims.onnx")

    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, -4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    save(model(g), "neg_value_dim.onnx")


def pb_tensors():
    """Serialized TensorProto files like the node tests' input_0.pb."""
    t = tensor("x", TensorProto.FLOAT, [2, 3], raw=struct.pack("<6f", *[i * 0.25 for i in range(6)]))
    with open(os.path.join(HERE, "tensor_f32.pb"), "wb") as f:
        f.write(t.SerializeToString())
    t = tensor("idx", TensorProto.INT64, [3], "int64_data", [5, -6, 7])
    with open(os.path.join(HERE, "tensor_i64.pb"), "wb") as f:
        f.write(t.SerializeToString())


def runtime_values():
    """Sizes given at run time (tests/unit/test_runtime_values.c): r =
    Reshape(x, s) with s an input; y = ConstantOfShape(c) (2.0) and w =
    Exp(Reshape(Transpose(y), [-1])), empty where an element of c is 0."""
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4]),
           helper.make_tensor_value_info("s", TensorProto.INT64, [3]),
           helper.make_tensor_value_info("c", TensorProto.INT64, [2])]
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("r", "y", "w")]
    two = tensor("two", TensorProto.FLOAT, [1], "float_data", [2.0])
    g = helper.make_graph(
        [helper.make_node("Reshape", ["x", "s"], ["r"], name="reshape"),
         helper.make_node("ConstantOfShape", ["c"], ["y"], name="fill", value=two),
         helper.make_node("Transpose", ["y"], ["t"], name="transpose", perm=[1, 0]),
         helper.make_node("Reshape", ["t", "flat"], ["f"], name="flatten"),
         helper.make_node("Exp", ["f"], ["w"], name="exp")],
        "runtime_values", ins, outs, [tensor("flat", TensorProto.INT64, [1], "int64_data", [-1])])
    save(model(g, opsets=(("", 18),)), "runtime_values.onnx")


def sequences():
    """A sequence and an optional at the graph's boundary
    (tests/unit/test_sequences.c): y = SequenceMap(s, t) with body c = a +
    b (s a sequence of float [N], t a float [1]); h =
    OptionalHasElement(o) and oo = Identity(o) (o an optional float [2])."""
    elem = helper.make_tensor_type_proto(TensorProto.FLOAT, ["N"])
    body = helper.make_graph([helper.make_node("Add", ["a", "b"], ["c"], name="add")], "body",
                             [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["N"]),
                              helper.make_tensor_value_info("b", TensorProto.FLOAT, [1])],
                             [helper.make_tensor_value_info("c", TensorProto.FLOAT, ["N"])])
    opt = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [2]))
    ins = [helper.make_value_info("s", helper.make_sequence_type_proto(elem)),
           helper.make_tensor_value_info("t", TensorProto.FLOAT, [1]), helper.make_value_info("o", opt)]
    outs = [helper.make_value_info("y", helper.make_sequence_type_proto(elem)),
            helper.make_tensor_value_info("h", TensorProto.BOOL, []), helper.make_value_info("oo", opt)]
    g = helper.make_graph([helper.make_node("SequenceMap", ["s", "t"], ["y"], name="map", body=body),
                           helper.make_node("OptionalHasElement", ["o"], ["h"], name="has"),
                           helper.make_node("Identity", ["o"], ["oo"], name="pass")], "sequences", ins, outs)
    save(model(g, opsets=(("", 17),)), "sequences.onnx")


def runtime_float_values():
    """Float values given at run time (tests/unit/test_runtime_values.c):
    y = Resize(x, scales s) (nearest, asymmetric, floor) and
    o = OneHot(i, depth d (float32), [0, 1])."""
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 3, 4]),
           helper.make_tensor_value_info("s", TensorProto.FLOAT, [4]),
           helper.make_tensor_value_info("i", TensorProto.INT64, [3]),
           helper.make_tensor_value_info("d", TensorProto.FLOAT, [])]
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "o")]
    vals = tensor("v", TensorProto.FLOAT, [2], "float_data", [0.0, 1.0])
    g = helper.make_graph(
        [helper.make_node("Resize", ["x", "", "s"], ["y"], name="resize", mode="nearest",
                          coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
         helper.make_node("OneHot", ["i", "d", "v"], ["o"], name="onehot")],
        "runtime_float_values", ins, outs, [vals])
    save(model(g, opsets=(("", 13),)), "runtime_float_values.onnx")


def runtime_loop():
    """A Loop run at run time (tests/unit/test_runtime_values.c): trip
    count m and condition c are inputs; the body carries x (float [3]),
    x' = x * w + i with w an outer input, stops once i >= stop (an outer
    input), scans x'; and binds ConstantOfShape(fail - i) (unused), whose
    size goes negative, an error of the body, once i > fail."""
    ins = [helper.make_tensor_value_info("m", TensorProto.INT64, []),
           helper.make_tensor_value_info("c", TensorProto.BOOL, []),
           helper.make_tensor_value_info("x0", TensorProto.FLOAT, [3]),
           helper.make_tensor_value_info("w", TensorProto.FLOAT, [3]),
           helper.make_tensor_value_info("stop", TensorProto.INT64, []),
           helper.make_tensor_value_info("fail", TensorProto.INT64, [])]
    outs = [helper.make_tensor_value_info("x_final", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("x_scan", TensorProto.FLOAT, None)]
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], name="cast", to=TensorProto.FLOAT),
         helper.make_node("Mul", ["x_in", "w"], ["xw"], name="mul"),
         helper.make_node("Add", ["xw", "fi"], ["x_out"], name="add"),
         helper.make_node("Less", ["i", "stop"], ["c_out"], name="less"),
         helper.make_node("Sub", ["fail", "i"], ["left"], name="sub"),
         helper.make_node("Unsqueeze", ["left", "axes"], ["left1"], name="unsqueeze"),
         helper.make_node("ConstantOfShape", ["left1"], ["unused"], name="fill"),
         helper.make_node("Identity", ["x_out"], ["x_row"], name="row")],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x_in", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x_out", TensorProto.FLOAT, [3]),
         helper.make_tensor_value_info("x_row", TensorProto.FLOAT, [3])],
        [tensor("axes", TensorProto.INT64, [1], "int64_data", [0])])
    g = helper.make_graph(
        [helper.make_node("Loop", ["m", "c", "x0"], ["x_final", "x_scan"], name="loop", body=body)],
        "runtime_loop", ins, outs)
    save(model(g, opsets=(("", 18),)), "runtime_loop.onnx")


if __name__ == "__main__":
    pb_tensors()
    conv_relu()
    symbolic()
    external()
    attrs()
    broken()
    runtime_values()
    sequences()
    runtime_float_values()
    runtime_loop()
