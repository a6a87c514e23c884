"""Graphs built from relay.* calls in Python (TVM's Relay API over Kiln's op
table): a small CNN against a NumPy reference, the text against TVM's print
of VGG-16 in the seeds' forum post, errors naming the op, param dicts."""
import os
import re

import numpy as np
import pytest

import kiln
from kiln import relay

HERE = os.path.dirname(os.path.abspath(__file__))
SEED_VGG = os.path.join(HERE, "..", "data", "seeds", "vgg16_relay_tvm.txt")


# ---- a small CNN against NumPy ----

def np_conv2d(x, w, pad):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1
    out = np.zeros((n, o, oh, ow), dtype=np.float64)
    for i in range(kh):
        for j in range(kw):
            out += np.einsum("nchw,oc->nohw", xp[:, :, i:i + oh, j:j + ow], w[:, :, i, j])
    return out


def np_maxpool2(x):
    n, c, h, w = x.shape
    return x.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def small_cnn():
    data = relay.var("data", shape=(2, 3, 12, 12))
    w1 = relay.var("conv1_weight", shape=(8, 3, 3, 3))
    b1 = relay.var("conv1_bias", shape=(8,))
    gamma, beta = relay.var("bn_gamma", shape=(8,)), relay.var("bn_beta", shape=(8,))
    mean, var = relay.var("bn_mean", shape=(8,)), relay.var("bn_var", shape=(8,))
    w2 = relay.var("fc_weight", shape=(10, 8 * 6 * 6))
    b2 = relay.var("fc_bias", shape=(10,))
    y = relay.nn.conv2d(data, w1, padding=(1, 1), channels=8, kernel_size=(3, 3))
    y = relay.nn.bias_add(y, b1)
    y = relay.nn.batch_norm(y, gamma, beta, mean, var, epsilon=1e-5)[0]
    y = relay.nn.relu(y)
    y = relay.nn.max_pool2d(y, pool_size=(2, 2), strides=(2, 2))
    skip = relay.multiply(y, relay.const(0.5))
    y = relay.add(y, skip)
    y = relay.transpose(y, (0, 1, 3, 2))
    y = relay.reshape(y, (2, -1))
    y = relay.nn.dense(y, w2, units=10)
    y = relay.nn.bias_add(y, b2)
    y = relay.nn.softmax(y)
    params = [data, w1, b1, gamma, beta, mean, var, w2, b2]
    return relay.Function(params, y)


def test_small_cnn_matches_numpy():
    rng = np.random.default_rng(18)
    p = {
        "conv1_weight": rng.standard_normal((8, 3, 3, 3)).astype("float32") * 0.3,
        "conv1_bias": rng.standard_normal(8).astype("float32"),
        "bn_gamma": rng.uniform(0.5, 1.5, 8).astype("float32"),
        "bn_beta": rng.standard_normal(8).astype("float32"),
        "bn_mean": rng.standard_normal(8).astype("float32"),
        "bn_var": rng.uniform(0.5, 2, 8).astype("float32"),
        "fc_weight": rng.standard_normal((10, 288)).astype("float32") * 0.1,
        "fc_bias": rng.standard_normal(10).astype("float32"),
    }
    x = rng.standard_normal((2, 3, 12, 12)).astype("float32")
    mod = kiln.IRModule.from_expr(small_cnn())
    assert list(mod.input_info()) == ["data"] + list(p)
    with relay.build_config(opt_level=3):
        lib = relay.build(mod, target="llvm", params=p)
    m = kiln.graph_executor.GraphModule(lib["default"](kiln.cpu()))
    assert m.get_num_inputs() == 1  # the weights were bound
    m.set_input("data", x)
    m.run()
    got = m.get_output(0).numpy()

    q = {k: v.astype(np.float64) for k, v in p.items()}
    y = np_conv2d(x.astype(np.float64), q["conv1_weight"], 1) + q["conv1_bias"][None, :, None, None]
    c = lambda v: v[None, :, None, None]  # noqa: E731
    y = (y - c(q["bn_mean"])) / np.sqrt(c(q["bn_var"]) + 1e-5) * c(q["bn_gamma"]) + c(q["bn_beta"])
    y = np_maxpool2(np.maximum(y, 0))
    y = y + y * 0.5
    y = y.transpose(0, 1, 3, 2).reshape(2, -1)
    y = y @ q["fc_weight"].T + q["fc_bias"]
    y = np.exp(y - y.max(axis=1, keepdims=True))
    ref = y / y.sum(axis=1, keepdims=True)
    assert got.shape == (2, 10)
    err = np.linalg.norm(got - ref) / np.linalg.norm(ref)
    assert err < 1e-5, err


def test_functions_come_from_the_op_table():
    names = {o["name"] for o in relay.op.ops()}
    assert names == set(relay.OPS) and len(names) > 100
    for n in ("nn.conv2d", "nn.dense", "nn.relu", "nn.batch_norm", "nn.max_pool2d", "nn.softmax",
              "nn.bias_add", "add", "multiply", "reshape", "transpose", "concatenate"):
        assert n in names
    ns, _, short = "nn.conv2d".rpartition(".")
    assert getattr(getattr(relay, ns), short)._kiln_op


def test_concatenate_and_operators():
    a = relay.var("a", shape=(2, 3))
    b = relay.var("b", shape=(2, 5))
    y = relay.concatenate([a, b], axis=1) * 2.0 - 1.0
    mod = kiln.IRModule.from_expr(y)  # free variables become the parameters
    lib = relay.build(mod, target="llvm")
    m = kiln.graph_executor.GraphModule(lib["default"](kiln.cpu()))
    av, bv = np.random.rand(2, 3).astype("float32"), np.random.rand(2, 5).astype("float32")
    m.set_input("a", av)
    m.set_input("b", bv)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), np.concatenate([av, bv], 1) * 2 - 1, rtol=1e-6)
    assert y.checked_type == relay.TensorType((2, 8), "float32")


def test_identical_layers_share_a_kernel():
    """Two identical conv blocks compile to one kernel; the profile's Ops
    column names it for both nodes (TVM's debug executor), the second
    node's name with a digit appended."""
    x = relay.var("x", shape=(1, 8, 10, 10))
    y = x
    for i in range(3):
        w = relay.const(np.random.rand(8, 8, 3, 3).astype("float32") * 0.1)
        y = relay.nn.relu(relay.nn.conv2d(y, w, padding=(1, 1), channels=8, kernel_size=(3, 3)))
    mod = kiln.IRModule.from_expr(y)
    lib = relay.build(mod, target="llvm")
    rows = kiln.debug_executor.from_module(lib).profile(number=1, repeat=1, x=np.ones((1, 8, 10, 10), "float32")).rows
    convs = [r for r in rows if "conv2d" in r["op_list"]]
    assert len(convs) == 3
    assert len({r["ops"] for r in convs}) == 1, [(r["name"], r["ops"]) for r in convs]
    k = convs[0]["ops"]
    assert [r["name"] for r in convs] == [k, k + "1", k + "2"]
    assert k in lib.function_names and len([f for f in lib.function_names if "conv2d" in f]) == 1


def test_type_errors_name_the_op():
    data = relay.var("data", shape=(1, 3, 8, 8))
    with pytest.raises(kiln.KilnError, match=r"nn\.conv2d: .*3"):
        relay.nn.conv2d(data, relay.var("w", shape=(4, 2, 3, 3)))
    with pytest.raises(kiln.KilnError, match=r"nn\.dense"):
        relay.nn.dense(relay.var("x", shape=(2, 5)), relay.var("w", shape=(3, 4)))
    with pytest.raises(kiln.KilnError, match=r"add"):
        relay.add(relay.var("p", shape=(2, 3)), relay.var("q", shape=(4,)))
    with pytest.raises(TypeError, match=r"relay\.reshape"):
        relay.reshape(data)  # newshape is required
    with pytest.raises(TypeError, match=r"relay\.nn\.softmax: attribute axis='1' must be int"):
        relay.nn.softmax(data, axis="1")  # the C side would read it as absent
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'axes'"):
        relay.nn.softmax(data, axes=1)
    with pytest.raises(kiln.KilnError, match=r"reshape: cannot reshape"):
        relay.reshape(data, (1.5, 2))
    with pytest.raises(kiln.KilnError, match=r"field 1"):
        relay.nn.batch_norm(data, *[relay.var(n, shape=(3,)) for n in "gbmv"])[1]
    free = relay.var("free", shape=(1, 3, 8, 8))
    with pytest.raises(kiln.KilnError, match=r"%free is free"):
        kiln.IRModule.from_expr(relay.Function([data], relay.add(data, free)))


def test_param_dict_round_trip():
    params = {"w": np.random.rand(3, 4).astype("float32"), "i": np.arange(5, dtype="int64")}
    blob = relay.save_param_dict(params)
    assert blob[:8] == (0xF7E58D4F05049CB7).to_bytes(8, "little")  # TVM's params magic
    back = relay.load_param_dict(blob)
    assert set(back) == set(params)
    for k, v in params.items():
        np.testing.assert_array_equal(back[k].numpy(), v)


# ---- the text against TVM's print of VGG-16 (the seeds' forum post) ----

def vgg16():
    """VGG-16 as TVM's relay.testing.vgg builds it (weights as variables)."""
    data = relay.var("data", shape=(1, 3, 224, 224))
    params = [data]
    y, k = data, 0
    for n_convs, ch in [(2, 64), (2, 128), (3, 256), (3, 512), (3, 512)]:
        for _ in range(n_convs):
            cin = y.checked_type.shape[1]
            w = relay.var("conv%d_weight" % k, shape=(ch, cin, 3, 3))
            b = relay.var("conv%d_bias" % k, shape=(ch,))
            params += [w, b]
            y = relay.nn.conv2d(y, w, padding=(1, 1), channels=ch, kernel_size=(3, 3))
            y = relay.nn.relu(relay.nn.bias_add(y, b))
            k += 1
        y = relay.nn.max_pool2d(y, pool_size=(2, 2), strides=(2, 2))
    y = relay.nn.batch_flatten(y)
    for i, units in enumerate([4096, 4096, 1000]):
        cin = y.checked_type.shape[1]
        w = relay.var("fc%d_weight" % i, shape=(units, cin))
        b = relay.var("fc%d_bias" % i, shape=(units,))
        params += [w, b]
        y = relay.nn.bias_add(relay.nn.dense(y, w, units=units), b, axis=-1)
        if i < 2:
            y = relay.nn.dropout(relay.nn.relu(y), rate=0.5)
    return relay.Function(params, relay.nn.softmax(y))


LINE = re.compile(r"^(?:%(\d+) = )?([\w.]+)\((.*)\) /\* ty=(.*?) \*/;?$")


def parse_relay(text):
    """[(op, [args], {attr: value}, type)] of a function's body, with
    TupleGetItem lines (%49 = %48.0) folded into their tuple and the
    arguments renamed to the positions of the calls they come from."""
    lines = [ln.strip() for ln in text.strip().splitlines()]
    head = lines[0]
    assert head.startswith(("fn (", "def @main(")) and head.endswith("{"), head
    body, alias, out = lines[1:-1], {}, []
    index = {}
    for ln in body:
        m = re.match(r"^%(\d+) = %(\d+)\.0;$", ln)
        if m:
            alias[m.group(1)] = alias.get(m.group(2), m.group(2))
            continue
        if re.match(r"^%\d+$", ln):
            continue  # Kiln names the result on its last line, TVM inlines it
        m = LINE.match(ln)
        assert m, ln
        num, op, inner, ty = m.groups()
        ty = re.sub(r"^\((Tensor\[.*?\]), .*\)$", r"\1", ty)  # dropout's tuple type: field 0
        inner = re.sub(r" /\* ty=[^*]*\*/", "", inner)
        parts = [p.strip() for p in re.split(r",\s*(?![^\[]*\])", inner)]
        args = [p for p in parts if "=" not in p]
        attrs = dict(p.split("=", 1) for p in parts if "=" in p)
        refs = []
        for a in args:
            r = re.match(r"^%(\d+)$", a)
            if r:
                refs.append(("call", index[alias.get(r.group(1), r.group(1))]))
            else:
                refs.append(("data",) if a == "%data" else ("weight",))
        if num is not None:
            index[num] = len(out)
        out.append((op, refs, attrs, ty))
    return head, out


def test_vgg16_text_matches_tvms_print():
    with open(SEED_VGG, encoding="utf-8") as f:
        tvm_text = f.read()
    mod = kiln.IRModule.from_expr(vgg16())
    text = str(mod)
    assert text.startswith("def @main(%data: Tensor[(1, 3, 224, 224), float32], %conv0_weight: ")
    assert str(mod["main"]).startswith("fn (%data: Tensor[(1, 3, 224, 224), float32]")
    tvm_head, tvm_calls = parse_relay(tvm_text)
    head, calls = parse_relay(text)
    assert tvm_head.endswith(") -> Tensor[(1, 1000), float32] {") and head.endswith(") -> Tensor[(1, 1000), float32] {")
    assert len(calls) == len(tvm_calls) == 56
    for (op, refs, attrs, ty), (top, trefs, tattrs, tty) in zip(calls, tvm_calls):
        assert op == top and refs == trefs and ty == tty, ((op, refs, ty), (top, trefs, tty))
        # TVM prints the attributes that differ from their defaults; Kiln
        # prints every attribute.  TVM's layout attributes there are after
        # its layout pass (NCHW16c); the rest must agree.
        for k, v in tattrs.items():
            if k == "layout":
                continue
            assert attrs.get(k) == v, (op, k, v, attrs)


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul_transpose_flags(ta, tb):
    """relay.nn.matmul's transpose_a / transpose_b read that operand with its
    last two dimensions swapped (square operands: a flag that was ignored
    would give a plausible, wrong product)."""
    rng = np.random.default_rng()
    a = rng.standard_normal((2, 5, 5)).astype("float32")
    b = rng.standard_normal((2, 5, 5)).astype("float32")
    va, vb = relay.var("a", shape=a.shape), relay.var("b", shape=b.shape)
    mod = kiln.IRModule.from_expr(relay.Function([va, vb], relay.nn.matmul(va, vb, transpose_a=ta, transpose_b=tb)))
    with relay.build_config(opt_level=3):
        lib = relay.build(mod, target="llvm")
    m = kiln.graph_executor.GraphModule(lib["default"](kiln.cpu()))
    m.set_input("a", a)
    m.set_input("b", b)
    m.run()
    want = (a.transpose(0, 2, 1) if ta else a) @ (b.transpose(0, 2, 1) if tb else b)
    np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-5, atol=1e-5)
