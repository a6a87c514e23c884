"""The model flow with TVM's names: from_onnx -> PassContext/build ->
graph executor (set_input, run, get_output, benchmark) -> debug executor
profile, against PyTorch's outputs; and its errors.

ResNet-18 comes from tools/export_models.py (seeded random weights; run
here if build/models lacks it); the digits model is bundled.  The ResNet
script is the one in docs/python_model_flow.md, run as written there.
"""
import contextlib
import io
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import kiln
from kiln import graph_executor

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODELS = os.path.join(ROOT, "build", "models")
DIGITS = os.path.join(ROOT, "models", "digits")
DIGITS_ONNX = os.path.join(DIGITS, "digits.onnx")
DOC = os.path.join(ROOT, "docs", "python_model_flow.md")


def _resnet_paths():
    return [os.path.join(MODELS, "resnet18" + ext) for ext in (".onnx", ".input.npy", ".output.npy")]


@pytest.fixture(scope="module")
def resnet_files():
    paths = _resnet_paths()
    if not all(os.path.exists(p) for p in paths):
        try:
            import torch  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
            import torchvision  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
        except ImportError:
            pytest.skip("torch/torchvision are not installed: cannot export resnet18")
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", "export_models.py"), "resnet18"],
                       check=True, timeout=600)
    return paths


@pytest.fixture(scope="module")
def doc_run(resnet_files, tmp_path_factory):
    """Run the documentation's script; its namespace and what it printed."""
    pytest.importorskip("onnx")
    text = open(DOC, encoding="utf-8").read()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    code = code.replace('"build/models/', '"%s/' % MODELS)
    ns = {"__name__": "doc_script"}
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("doc"))
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, DOC, "exec"), ns)  # pylint: disable=exec-used
        ns["_cwd"] = os.getcwd()
    finally:
        os.chdir(cwd)
    return ns, out.getvalue()


@pytest.fixture(scope="module")
def digits():
    """The digits model for one image: (mod, params, lib)."""
    mod, params = kiln.frontend.from_onnx(DIGITS_ONNX, {"image": (1, 1, 8, 8)})
    with kiln.transform.PassContext(opt_level=3):
        lib = kiln.build(mod, target="cpu", params=params)
    return mod, params, lib


def _rel_l2(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


# ---- ResNet-18, the documentation's script ----


def test_doc_script_resnet18_matches_pytorch(doc_run):
    ns, out = doc_run
    ref = ns["torch_output"]
    assert ns["kiln_output"].shape == ref.shape == (1, 1000)
    assert _rel_l2(ns["kiln_output"], ref) < 1e-4
    assert _rel_l2(ns["kiln_output_1"], ref) < 1e-4  # the create_executor form, opt level 1
    lines = out.splitlines()
    assert lines[0] == "1"
    assert lines[1].startswith("  %0 = nn.conv2d(%data, ")
    assert lines[2] == "42 params"
    assert lines[3].startswith("relative L2 error vs PyTorch: ")
    assert "Execution time summary:" in out and "mean (ms)" in out
    assert "Total_time" in out and "Task" in out


def test_doc_script_text_and_params(doc_run):
    ns, _ = doc_run
    mod, params = ns["mod"], ns["params"]
    text = str(mod)
    assert text.startswith("def @main(%data: Tensor[(1, 3, 224, 224), float32]")
    assert str(mod["main"]).startswith("fn (%data: Tensor[(1, 3, 224, 224), float32]")
    assert text.count("nn.conv2d(") == 20
    import onnx  # pylint: disable=import-outside-toplevel
    from onnx import numpy_helper  # pylint: disable=import-outside-toplevel
    inits = {t.name: t for t in ns["onnx_model"].graph.initializer}
    assert set(params) <= set(inits) and len(params) == 42
    for name, arr in params.items():
        assert isinstance(arr, kiln.nd.NDArray)
        np.testing.assert_array_equal(arr.numpy(), numpy_helper.to_array(inits[name]))
    assert onnx  # the ModelProto form was the one imported


def test_doc_script_profile(doc_run):
    ns, _ = doc_run
    report, loaded = ns["report"], ns["loaded"]
    kernels = loaded.function_names
    # identical fused functions share one kernel (ResNet-18's twin blocks)
    assert len(report.rows) > len(kernels)
    assert len(report.rows) == len(set(r["name"] for r in report.rows))
    assert {r["func_name"] for r in report.rows} == set(kernels)
    for r in report.rows:  # Ops: the function called, as TVM shows it
        assert r["ops"] == r["func_name"] and r["name"].startswith(r["ops"])
        assert r["op_list"].split(",")[-1] in ("nn.relu", "add", "nn.max_pool2d", "reshape",
                                               "layout_transform", "nn.global_avg_pool2d"), r
    convs = [r for r in report.rows if "conv2d" in r["ops"]]
    assert len(convs) >= 10
    for r in convs:  # direct, or Winograd for the 3x3 stride-1 layers from 64 channels
        assert r["task"].startswith(("conv2d_NCHWc.x86 [", "conv2d_NCHWc_winograd.x86 [")), r
    assert any(r["task"].startswith("conv2d_NCHWc_winograd.x86 [(1,64,56,56),(64,64,3,3)] s1 p1") for r in convs)
    for r in report.rows:
        assert r["time_us"] >= 0 and r["shape"] and r["dtype"] == "float32"
    assert abs(sum(r["percent"] for r in report.rows) - 100.0) < 0.5
    table = str(report)
    header = table.splitlines()[0].split()
    assert header[:2] == ["Node", "Name"] and header[-1] == "Task"
    assert table.splitlines()[-1].startswith("Total_time")
    assert report.csv().splitlines()[0].startswith("Node Name,")
    assert report.trace().lstrip().startswith("[")


def test_doc_script_exported_module(doc_run):
    ns, _ = doc_run
    path = os.path.join(ns["_cwd"], "resnet18.so")
    assert os.path.exists(path)
    lib = kiln.runtime.load_module(path)
    m = graph_executor.GraphModule(lib["default"](kiln.cpu()))
    m.run(data=ns["x"])
    assert _rel_l2(m.get_output(0).numpy(), ns["torch_output"]) < 1e-4
    assert m.get_input_info() == ({"data": (1, 3, 224, 224)}, {"data": "float32"})


# ---- digits: the bundled model's held-out accuracy ----


def test_digits_heldout_accuracy_equals_pytorch():
    held = np.load(os.path.join(DIGITS, "heldout.npz"))
    images, labels, logits = held["image"], held["label"], held["logits"]
    ref = dict(line.split() for line in open(os.path.join(DIGITS, "reference.txt")) if line.strip())
    mod, params = kiln.frontend.from_onnx(DIGITS_ONNX, {"image": images.shape})
    with kiln.transform.PassContext(opt_level=3):
        lib = kiln.build(mod, target="cpu", params=params)
    m = graph_executor.GraphModule(lib["default"](kiln.cpu()))
    m.set_input("image", images)
    m.run()
    out = m.get_output(0).numpy()
    assert out.shape == (len(labels), 10)
    np.testing.assert_allclose(out, logits, rtol=1e-4, atol=1e-4)
    acc = float((out.argmax(1) == labels).mean())
    assert "%.6f" % acc == "%.6f" % float(ref["pytorch_accuracy"])
    assert len(labels) == int(ref["heldout_images"])


# ---- the API piece by piece (digits) ----


def test_from_onnx_model_forms(digits):
    mod, params, _ = digits
    text = str(mod)
    with open(DIGITS_ONNX, "rb") as f:
        raw = f.read()
    m2, p2 = kiln.frontend.from_onnx(raw, {"image": [1, 1, 8, 8]})
    assert str(m2) == text and sorted(p2) == sorted(params)
    m3, _ = kiln.frontend.from_onnx(bytearray(raw), {"image": np.array([1, 1, 8, 8])})
    assert str(m3) == text
    onnx = pytest.importorskip("onnx")
    m4, _ = kiln.frontend.from_onnx(onnx.load(DIGITS_ONNX), {"image": (1, 1, 8, 8)})
    assert str(m4) == text
    import pathlib  # pylint: disable=import-outside-toplevel
    m5, _ = kiln.frontend.from_onnx(pathlib.Path(DIGITS_ONNX), {"image": (1, 1, 8, 8)})
    assert str(m5) == text
    assert mod.input_info() == {"image": ((1, 1, 8, 8), "float32")}
    assert mod.output_info() == [((1, 10), "float32")]
    assert mod["main"].mod is mod and mod.opt_level is None


def test_optimize_and_fused_text(digits):
    mod = digits[0]
    opt = mod.optimize(3)
    assert opt.opt_level == 3 and opt.params == {}
    assert "nn.contrib_conv2d_NCHWc" in str(opt) and "nn.contrib_conv2d_NCHWc" not in str(mod)
    fused = opt.fused_text(3)
    assert "fused_nn_contrib_conv2d_NCHWc_add_nn_relu = fn (" in fused
    assert "Primitive=1" in fused
    with kiln.transform.PassContext(opt_level=3):
        assert mod.fused_text() == fused
    # building an optimized graph builds it as it is
    lib = kiln.build(opt, "cpu")
    assert "fused_nn_contrib_conv2d_NCHWc_add_nn_relu" in lib.function_names


def test_graph_executor_api(digits):
    _, _, lib = digits
    x = np.load(os.path.join(DIGITS, "heldout_0.npy"))
    m = graph_executor.GraphModule(lib["default"](kiln.cpu()))
    assert m.get_num_inputs() == 1 and m.get_num_outputs() == 1
    assert m.get_input_info() == ({"image": (1, 1, 8, 8)}, {"image": "float32"})
    assert m.get_input_index("image") == 0
    m.set_input("image", x)
    m.run()
    ref = m.get_output(0).numpy().copy()
    np.testing.assert_array_equal(m.get_input(0).numpy(), x)
    # by index, as a kiln array, as float64 (converted as TVM's copyfrom does), through run()
    for value in (kiln.nd.array(x), x.astype("float64"), x.tolist()):
        m.set_input(0, np.zeros_like(x))
        m.set_input(0, value)
        m.run()
        np.testing.assert_array_equal(m.get_output(0).numpy(), ref)
    m.run(image=x * 0)
    assert not np.array_equal(m.get_output(0).numpy(), ref)
    m.set_input(**{"image": x})
    m.run()
    # outputs: a fresh array that numpy() views without copying
    out = m.get_output(0)
    a, b = out.numpy(), out.numpy()
    assert a.ctypes.data == b.ctypes.data == out.data_ptr
    np.testing.assert_array_equal(a, ref)
    into = np.empty((1, 10), "float32")
    assert m.get_output(0, into) is into
    np.testing.assert_array_equal(into, ref)
    into_nd = kiln.nd.empty((1, 10))
    m.get_output(0, out=into_nd)
    np.testing.assert_array_equal(into_nd.numpy(), ref)
    # each executor owns its buffers
    m2 = graph_executor.GraphModule(lib)
    m2.run(image=x * 0)
    m.run()
    np.testing.assert_array_equal(m.get_output(0).numpy(), ref)
    assert m.get_planned_bytes() <= m.get_naive_bytes()
    m["set_input"]("image", x)
    m["run"]()


def test_create_from_graph_json_and_tuple(digits):
    _, _, lib = digits
    x = np.load(os.path.join(DIGITS, "heldout_0.npy"))
    graph_json, libmod, params = lib  # TVM's old relay.build tuple
    assert graph_json == lib.get_graph_json() and libmod is lib
    assert sorted(params) == sorted(lib.get_params()) and all(k.startswith("p") for k in params)
    a = graph_executor.create(graph_json, libmod, kiln.cpu())
    b = kiln.contrib.graph_runtime.create(lib.get_graph_json(), lib.get_lib(), kiln.cpu())
    a.run(image=x)
    b.set_input("image", x)
    b.load_params(kiln.runtime.save_param_dict(params))
    b.run()
    np.testing.assert_array_equal(a.get_output(0).numpy(), b.get_output(0).numpy())
    blob = kiln.runtime.save_param_dict(params)
    back = kiln.runtime.load_param_dict(blob)
    assert sorted(back) == sorted(params)
    for k in params:
        np.testing.assert_array_equal(back[k].numpy(), params[k].numpy())


def test_params_replace_weights(digits):
    mod, params, lib = digits
    x = np.load(os.path.join(DIGITS, "heldout_0.npy"))
    base = graph_executor.GraphModule(lib)
    base.run(image=x)
    y0 = base.get_output(0).numpy()
    orig = params["fc2.bias"].numpy().copy()
    bias = orig + 1.0
    lib2 = kiln.build(mod, "cpu", params={"fc2.bias": bias})
    m2 = graph_executor.GraphModule(lib2)
    m2.run(image=x)
    np.testing.assert_allclose(m2.get_output(0).numpy(), y0 + 1.0, rtol=1e-5, atol=1e-5)
    # the mod itself is unchanged, and its own params cost nothing
    np.testing.assert_array_equal(mod.params["fc2.bias"].numpy(), orig)
    assert kiln.graph._changed_params(mod, params) == {}


def test_benchmark_fields(digits):
    m = graph_executor.GraphModule(digits[2])
    m.set_input("image", np.load(os.path.join(DIGITS, "heldout_0.npy")))
    r = m.benchmark(kiln.cpu(), repeat=4, number=20)
    assert len(r.results) == 4
    assert 0 < r.min <= r.median <= r.max and r.min <= r.mean <= r.max and r.std >= 0
    s = str(r)
    assert s.startswith("Execution time summary:\n")
    assert s.split("\n")[1].split() == ["mean", "(ms)", "median", "(ms)", "max", "(ms)", "min",
                                        "(ms)", "std", "(ms)"]
    assert [float(v) for v in s.split("\n")[2].split()] == pytest.approx(
        [r.mean, r.median, r.max, r.min, r.std], abs=1e-4)
    r2 = m.benchmark(kiln.cpu(), repeat=2, number=1, min_repeat_ms=2)
    assert len(r2.results) == 2
    r3 = m.benchmark(kiln.cpu(), repeat=2, number=2, end_to_end=True,
                     image=np.zeros((1, 1, 8, 8), "float32"))
    assert len(r3.results) == 2 and r3.min > 0


def test_debug_executor(digits, tmp_path, capsys):
    lib = digits[2]
    x = np.load(os.path.join(DIGITS, "heldout_0.npy"))
    dbg = kiln.contrib.debugger.debug_executor.create(lib.get_graph_json(), lib, kiln.cpu(),
                                                      dump_root=str(tmp_path))
    dbg.set_input("image", x)
    dbg.run()
    table = capsys.readouterr().out
    assert table.splitlines()[0].split()[-1] == "Task" and "Total_time" in table
    rep = dbg.debug_report
    assert len(rep) == len(lib.function_names)
    assert os.path.exists(tmp_path / "_kiln_debug" / "profile.csv")
    assert os.path.exists(tmp_path / "_kiln_debug" / "trace.json")
    rows = {r["name"]: r for r in dbg.profile(number=5, repeat=2)}
    assert rows["fused_nn_dense_add"]["task"].startswith("dense_")
    assert rows["fused_nn_max_pool2d"]["task"] == "-"
    assert len(dbg.run_individual(2)) == len(rows)
    d2 = kiln.debug_executor.from_module(lib)
    assert len(d2.profile(image=x).rows) == len(rows)


def test_relay_names(digits):
    relay = kiln.relay
    x = np.load(os.path.join(DIGITS, "heldout_0.npy"))
    mod, params = relay.frontend.from_onnx(DIGITS_ONNX, {"image": (1, 1, 8, 8)})
    with relay.build_config(opt_level=2):
        assert kiln.transform.PassContext.current().opt_level == 2
        lib = relay.build(mod, target="llvm", params=params)
        f = relay.build_module.create_executor("graph", mod, kiln.cpu(), "llvm").evaluate()
    assert kiln.transform.PassContext.current().opt_level == 2  # the default outside
    y = f(x, **params).numpy()
    m = graph_executor.GraphModule(lib)
    m.run(image=x)
    np.testing.assert_allclose(y, m.get_output(0).numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(f(image=x).numpy(), y)
    opt, opt_params = relay.optimize(mod, "llvm", params)
    assert opt.opt_level == 2 and opt_params == {}


def test_te_build_still_works():
    A = kiln.placeholder((4,), name="A")
    B = kiln.compute((4,), lambda i: A[i] * 2, name="B")
    s = kiln.create_schedule(B.op)
    f = kiln.build(s, [A, B], "cpu", name="dbl")
    b = kiln.nd.empty(4)
    f["dbl"](np.arange(4, dtype="float32"), b)
    np.testing.assert_array_equal(b.numpy(), [0, 2, 4, 6])
    with pytest.raises(kiln.KilnError, match="params are for models"):
        kiln.build(s, [A, B], "cpu", params={"w": np.zeros(1)})


def test_capi_graph_functions():
    g = kiln.capi.graph.from_onnx(DIGITS_ONNX, "image:[2,1,8,8]")
    assert isinstance(g, kiln.IRModule)
    assert kiln.capi.api.ObjectKind(g) == "Graph"
    assert kiln.capi.graph.num_inputs(g) == 1 and kiln.capi.graph.input_name(g, 0) == "image"
    assert list(kiln.capi.graph.input_shape(g, 0).numpy()) == [2, 1, 8, 8]
    assert kiln.capi.graph.output_dtype(g, 0) == "float32"
    assert kiln.capi.graph.num_params(g) == 8 and kiln.capi.graph.opt_level(g) == -1
    assert kiln.capi.ir.AsText(g) == kiln.capi.graph.as_text(g)
    assert "graph.build(graph, opt_level, target, precision=None)" in kiln.capi.graph.build.__doc__


# ---- errors ----


def test_error_wrong_input_name_and_shape(digits):
    m = graph_executor.GraphModule(digits[2])
    with pytest.raises(kiln.KilnError, match="image"):
        m.set_input("images", np.zeros((1, 1, 8, 8), "float32"))
    with pytest.raises(kiln.KilnError, match="shape"):
        m.set_input("image", np.zeros((1, 1, 8, 9), "float32"))
    with pytest.raises(kiln.KilnError, match="shape"):
        m.set_input(0, kiln.nd.array(np.zeros((2, 1, 8, 8), "float32")))
    with pytest.raises(kiln.KilnError, match="input 3 does not exist|out of range|3"):
        m.set_input(3, np.zeros((1, 1, 8, 8), "float32"))
    with pytest.raises(kiln.KilnError, match="no input 'x'"):
        m.get_input_index("x")
    with pytest.raises(kiln.KilnError):
        m.get_output(1)
    with pytest.raises(kiln.KilnError, match="cannot convert"):
        m.set_input("image", np.zeros((1, 1, 8, 8), "complex64"))
    with pytest.raises(kiln.KilnError, match="no value"):
        m.set_input("image")
    with pytest.raises(kiln.KilnError, match="only 'run'"):
        m.benchmark(kiln.cpu(), func_name="get_output")


def test_error_import():
    with pytest.raises(kiln.KilnError, match="graph.from_onnx: .*no_such_model.onnx"):
        kiln.frontend.from_onnx("/no/such/dir/no_such_model.onnx", {"image": (1, 1, 8, 8)})
    with pytest.raises(kiln.KilnError, match="graph.from_onnx: "):
        kiln.frontend.from_onnx(b"\x08\x07\x12\x04garbage-not-a-model\xff\xff", {"x": (1,)})
    with pytest.raises(kiln.KilnError, match="empty"):
        kiln.frontend.from_onnx(b"", {})
    with pytest.raises(kiln.KilnError, match="'input', which is not an input of the model"):
        kiln.frontend.from_onnx(DIGITS_ONNX, {"input": (1, 1, 8, 8), "image": (1, 1, 8, 8)})
    with pytest.raises(kiln.KilnError, match="image"):
        kiln.frontend.from_onnx(DIGITS_ONNX)  # the batch dimension is dynamic
    with pytest.raises(kiln.KilnError, match="must be ints"):
        kiln.frontend.from_onnx(DIGITS_ONNX, {"image": (None, 1, 8, 8)})
    with pytest.raises(kiln.KilnTypeError):
        kiln.frontend.from_onnx(12345, {"image": (1, 1, 8, 8)})
    with pytest.raises(kiln.KilnError, match="is float32 in the model, not int64"):
        kiln.frontend.from_onnx(DIGITS_ONNX, {"image": (1, 1, 8, 8)}, dtype={"image": "int64"})
    with pytest.raises(kiln.KilnError, match="not a data type"):
        kiln.frontend.from_onnx(DIGITS_ONNX, {"image": (1, 1, 8, 8)}, dtype="floaty")


def test_error_build(digits, tmp_path):
    mod, params, lib = digits
    with pytest.raises(kiln.KilnError, match="opt_level must be 0 to 3"):
        kiln.transform.PassContext(opt_level=4)
    with pytest.raises(kiln.KilnError, match="disabled_pass is not supported"):
        kiln.transform.PassContext(opt_level=3, disabled_pass=["AlterOpLayout"])
    with pytest.raises(kiln.KilnError, match="target 'rocm' is not supported"):
        kiln.build(mod, target="rocm")
    with pytest.raises(kiln.KilnError, match="no parameter 'nope'"):
        kiln.build(mod, "cpu", params={"nope": np.zeros(3, "float32")})
    with pytest.raises(kiln.KilnError, match=r"parameter 'fc2.bias' is Tensor\[\(10,\), float32\]"):
        kiln.build(mod, "cpu", params={"fc2.bias": np.zeros(11, "float32")})
    with pytest.raises(kiln.KilnError, match="bind before optimizing"):
        kiln.build(mod.optimize(1), "cpu", params={"fc2.bias": np.zeros(10, "float32")})
    with pytest.raises(kiln.KilnError, match="opt_level must be 0 to 3"):
        mod.optimize(7)
    with pytest.raises(kiln.KilnError, match="Graph"):
        kiln.capi.graph.as_text(lib)
    with pytest.raises(kiln.KilnError, match=r"graph.build: expected 3 to 4 arguments"):
        kiln.capi.graph.build(mod, 3)
    with pytest.raises(kiln.KilnError, match="no such file|cannot load"):
        kiln.runtime.load_module(str(tmp_path / "missing.so"))
    with pytest.raises(kiln.KilnError, match="runs on the CPU, not on cuda"):
        lib["default"](kiln.nd.Device(2, 0))
    with pytest.raises(kiln.KilnTypeError):
        graph_executor.GraphModule("lib")
    with pytest.raises(kiln.KilnError, match="no graph"):
        kiln.build(*_tiny(), name="t").get_graph_json()


def _tiny():
    A = kiln.placeholder((2,), name="A")
    B = kiln.compute((2,), lambda i: A[i] + 1, name="B")
    return kiln.create_schedule(B.op), [A, B], "cpu"


# ---- tuning: wrappers over the tuning engine's registry functions ----


def test_autotvm_missing_engine_function_is_an_error():
    # a library without the tuning engine's functions: a clear error, no fake results
    with pytest.raises(kiln.KilnError, match="kiln.autotvm.x is not available yet.*'autotvm.nope'"):
        kiln.autotvm._base.require("autotvm.nope", "x")
    task = kiln.autotvm.Task({"name": "dense_nopack.x86", "args": [], "config_space_size": 4})
    assert len(task.config_space) == 4
    with pytest.raises(kiln.KilnTypeError):
        kiln.autotvm.tuner.RandomTuner("task")


def test_autotvm_flow(digits, tmp_path, capfd):
    autotvm = kiln.autotvm
    if not autotvm.available():
        pytest.skip("this library has no tuning engine functions")
    mod, params, _ = digits
    with kiln.transform.PassContext(opt_level=3):
        tasks = autotvm.task.extract_from_program(mod["main"], params=params, target="llvm")
    assert [t.name for t in tasks] == ["conv2d_NCHWc.x86"] * 2 + ["dense_nopack.x86"] * 2
    assert tasks[0].nodes == ["fused_nn_contrib_conv2d_NCHWc_add_nn_relu"]
    assert all(len(t.config_space) > 1 and t.flops > 0 for t in tasks)
    assert [t.name for t in autotvm.task.extract_from_program(mod, params, "llvm", ops=["nn.dense"])] \
        == ["dense_nopack.x86"] * 2
    log = str(tmp_path / "tune.log")
    seen = []
    tuner = autotvm.tuner.RandomTuner(tasks[0])
    summary = tuner.tune(
        n_trial=3, measure_option=autotvm.measure_option(
            builder=autotvm.LocalBuilder(), runner=autotvm.LocalRunner(number=1, repeat=1)),
        callbacks=[autotvm.callback.progress_bar(3, prefix="[Task  1/4]"),
                   autotvm.callback.log_to_file(log), lambda t, i, r: seen.extend(r)])
    # the callbacks see the trials and the final re-measurements
    assert summary["measured"] == 3 and summary["verified"] >= 1
    assert len(seen) == 3 + summary["verified"]
    assert "[Task  1/4] Current/Best:" in capfd.readouterr().out  # the engine prints it
    lines = open(log).read().splitlines()
    assert len(lines) == 3 + summary["verified"]
    assert all('"version": 0.2' in ln or '"version":0.2' in ln for ln in lines)
    assert tuner.best_config is not None and tuner.best_flops > 0
    with autotvm.apply_history_best(log):
        with kiln.transform.PassContext(opt_level=3):
            lib = kiln.build(mod, "cpu", params=params)
    rows = {r["name"]: r["task"] for r in graph_executor.GraphModule(lib).profile().rows}
    # a config's newest record counts; the fastest of those is used
    newest = {}
    for n, ln in enumerate(lines, 1):
        newest[json_config(ln)] = (json_cost(ln), n)
    assert rows["fused_nn_contrib_conv2d_NCHWc_add_nn_relu"].endswith(
        "tune.log:%d" % min(newest.values())[1])
    with kiln.transform.PassContext(opt_level=3):
        lib2 = kiln.build(mod, "cpu", params=params)  # the context is closed again
    rows2 = {r["name"]: r["task"] for r in graph_executor.GraphModule(lib2).profile().rows}
    assert "tune.log" not in rows2["fused_nn_contrib_conv2d_NCHWc_add_nn_relu"]
    with pytest.raises(kiln.KilnError, match="no_such.log"):
        with autotvm.apply_history_best(str(tmp_path / "no_such.log")):
            pass


def json_config(line):
    import json  # pylint: disable=import-outside-toplevel
    return json.loads(line)["config"]["index"]


def json_cost(line):
    import json  # pylint: disable=import-outside-toplevel
    r = json.loads(line)["result"]
    return sum(r[0]) / len(r[0]) if r[1] == 0 else float("inf")
