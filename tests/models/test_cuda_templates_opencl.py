"""TVM's CUDA templates (src/topi/cuda) with the seeds' TopHub configs, on
OpenCL (POCL): single layers of VGG-16, ResNet-50 and MobileNet-V2 at the
seeds' workloads - a conv2d (with bias and relu fused into the kernel), a
depthwise conv2d with the same epilogue, a dense with bias - compiled with
`kiln compile --target "opencl -max_threads_per_block=1024" --tuning-records
<seed log>`, whose Task column names the record's file and line, against the
same layer compiled for the CPU.  POCL runs GPU kernels slowly, so the
layers are a subset chosen for size (the small late layers of each model
and a few batch-8 ones); every record's index and entity are checked in the
C unit tests (test_cuda_templates.c)."""
import json
import os
import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from e2e_common import ROOT, kiln
from test_gpu_models import first_output, needs_opencl, rel_l2

TOPHUB = os.path.join(ROOT, "tests", "data", "tophub")
OCL = "opencl -max_threads_per_block=1024"


def _record(log, line):
    with open(os.path.join(TOPHUB, log)) as f:
        return json.loads(f.read().splitlines()[line - 1])


def _layer_model(rec, path):
    task, args = rec["i"][1], rec["i"][2]
    rng = np.random.default_rng(0)
    if task == "topi_nn_dense":
        (m, k), (n, _) = args[0][1], args[1][1]
        w = (rng.standard_normal((n, k)) / np.sqrt(k)).astype("float32")
        b = rng.standard_normal(n).astype("float32")
        nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1)]
        shape_in, shape_out = [m, k], [m, n]
        inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")]
    else:
        d, kshape, st, pad, dil = args[0][1], args[1][1], args[2], args[3], args[4]
        dw = task == "topi_nn_depthwise_conv2d_nchw"
        oc = kshape[0] * kshape[1] if dw else kshape[0]
        w = (rng.standard_normal((oc, 1 if dw else d[1], kshape[2], kshape[3])) /
             np.sqrt(kshape[2] * kshape[3] * (1 if dw else d[1]))).astype("float32")
        b = rng.standard_normal(oc).astype("float32")
        nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], strides=st, pads=[pad[0], pad[1], pad[0], pad[1]],
                                  dilations=dil, group=d[1] if dw else 1),
                 helper.make_node("Relu", ["c"], ["y"])]
        oh = (d[2] + 2 * pad[0] - dil[0] * (kshape[2] - 1) - 1) // st[0] + 1
        ow = (d[3] + 2 * pad[1] - dil[1] * (kshape[3] - 1) - 1) // st[1] + 1
        shape_in, shape_out = d, [d[0], oc, oh, ow]
        inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")]
    g = helper.make_graph(nodes, "layer", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape_in)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape_out)], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return shape_in


# (log, line): records of the seeds' logs, chosen so POCL runs them quickly
LAYERS = [
    ("resnet50v1_bs_1.log", 20),     # conv2d 3x3 512 -> 512 at 14x14 (vthreads)
    ("mobilenet_v2_bs_1.log", 26),   # depthwise 3x3 960 at 7x7
    ("mobilenet_v2_bs_1.log", 25),   # conv2d 1x1 160 -> 960 at 7x7
    ("mobilenet_v2_bs_1.log", 4),    # conv2d 3x3 stride 2, 3 -> 32 at 224x224
    ("mobilenet_v2_bs_1.log", 29),   # dense 1280 -> 1000, batch 1
    ("vgg16_bs_1.log", 12),          # dense 4096 -> 1000, batch 1
    ("mobilenet_v2_bs_8.log", 26),   # conv2d 1x1 960 -> 160 at 7x7, batch 8
    ("mobilenet_v2_bs_8.log", 27),   # conv2d 1x1, batch 8
    ("resnet50v1_bs_1.log", 22),     # winograd 3x3 512 -> 512 at 7x7 (m = 2)
    ("resnet50v1_bs_1.log", 7),      # winograd 3x3 64 -> 64 at 56x56 (m = 4)
    ("mobilenet_v2_bs_128.log", 31), # dense 1280 -> 1000, batch 128 (the large-batch template)
    ("resnet50v1_bs_8.log", 24),     # dense 2048 -> 1000, batch 8
]


def _flops(rec):
    task, a = rec["i"][1], rec["i"][2]
    if task == "topi_nn_dense":
        return 2 * a[0][1][0] * a[0][1][1] * a[1][1][0]
    d, k, st, pad = a[0][1], a[1][1], a[2], a[3]
    oh, ow = (d[2] + 2 * pad[0] - k[2]) // st[0] + 1, (d[3] + 2 * pad[1] - k[3]) // st[1] + 1
    dw = task == "topi_nn_depthwise_conv2d_nchw"
    return 2 * d[0] * (k[0] * k[1] if dw else k[0]) * oh * ow * (1 if dw else d[1]) * k[2] * k[3]


def _random_batch8(n, seed=17, max_flops=4e7):
    """n batch-8 records of at most max_flops (POCL is slow), not in LAYERS
    already, drawn with a fixed seed."""
    pool = []
    for log in sorted(os.listdir(TOPHUB)):
        if log.endswith("_bs_8.log"):
            with open(os.path.join(TOPHUB, log)) as f:
                pool += [(log, i + 1) for i, ln in enumerate(f.read().splitlines()) if _flops(json.loads(ln)) <= max_flops]
    pool = [p for p in pool if p not in LAYERS]
    rng = np.random.default_rng(seed)
    return [(pool[i][0], int(pool[i][1])) for i in rng.choice(len(pool), size=n, replace=False)]


LAYERS += _random_batch8(3)


def _all_batch1():
    out = []
    for log in sorted(os.listdir(TOPHUB)):
        if log.endswith("_bs_1.log"):
            with open(os.path.join(TOPHUB, log)) as f:
                out += [(log, i + 1) for i in range(len(f.read().splitlines()))]
    return out


# every batch-1 record of the three models (67 layers, about 10 minutes on
# POCL): KILN_GPU_ALL_LAYERS=1
if os.environ.get("KILN_GPU_ALL_LAYERS") == "1":
    LAYERS = _all_batch1()


@needs_opencl
@pytest.mark.parametrize("log,line", LAYERS)
def test_seed_config_layer_matches_cpu(log, line, tmp_path):
    rec = _record(log, line)
    model = str(tmp_path / "layer.onnx")
    shape = _layer_model(rec, model)
    x = np.random.default_rng(1).standard_normal(shape).astype("float32")
    inp = str(tmp_path / "x.npz")
    np.savez(inp, x=x)
    outs = {}
    for name, target in (("gpu", OCL), ("cpu", "llvm")):
        so = str(tmp_path / (name + ".so"))
        kiln("compile", model, "-o", so, "--target", target, "--tuning-records", os.path.join(TOPHUB, log),
             "--no-shipped-records")
        out = str(tmp_path / (name + ".npz"))
        dev = "opencl" if name == "gpu" else "cpu"
        p = kiln("run", so, "--device", dev, "--inputs", inp, "-o", out, "--profile")
        if name == "gpu":
            assert f"{log}:{line}" in p.stdout, p.stdout
            if rec["i"][5]["t"] == "winograd":
                assert "topi_nn_conv2d (winograd)" in p.stdout, p.stdout
                # the kernel transform was folded at build time: three
                # kernels (data transform, batched GEMM, inverse) run
                info = kiln("inspect", so).stdout
                assert "device kernels (3, opencl):" in info and "winograd_without_weight_transform" in info, info
        outs[name] = first_output(out)
    err = rel_l2(outs["gpu"], outs["cpu"])
    assert err <= 1e-5, f"{log}:{line}: relative L2 error {err:g}"


@needs_opencl
@pytest.mark.parametrize("task,data,kernel", [
    ("topi_nn_conv2d", [1, 96, 7, 7], [192, 96, 1, 1]),     # 1x1, no such layer in the log
    ("topi_nn_conv2d", [1, 48, 14, 14], [48, 48, 3, 3]),    # 3x3 pad 1
    ("topi_nn_depthwise_conv2d_nchw", [1, 72, 14, 14], [72, 1, 3, 3]),
])
def test_nearest_record_fallback(task, data, kernel, tmp_path):
    """A workload the log has no record for takes the nearest record of the
    same template (TVM's fallback_with_reference_log): the Task column
    names it, and the kernel equals the CPU's (which config it takes is
    checked by cuda_templates.nearest_record in the C unit tests)."""
    log = "mobilenet_v2_bs_1.log"
    pad = [kernel[2] // 2, kernel[3] // 2]
    rec = {"i": [None, task, [["TENSOR", data], ["TENSOR", kernel], [1, 1], pad, [1, 1]]]}
    model = str(tmp_path / "layer.onnx")
    shape = _layer_model(rec, model)
    inp = str(tmp_path / "x.npz")
    np.savez(inp, x=np.random.default_rng(2).standard_normal(shape).astype("float32"))
    outs = {}
    for name, target in (("gpu", OCL), ("cpu", "llvm")):
        so = str(tmp_path / (name + ".so"))
        p = kiln("compile", model, "-o", so, "--target", target, "--tuning-records", os.path.join(TOPHUB, log),
                 "--no-shipped-records")
        out = str(tmp_path / (name + ".npz"))
        q = kiln("run", so, "--device", "opencl" if name == "gpu" else "cpu", "--inputs", inp, "-o", out, "--profile")
        outs[name] = first_output(out)
        if name != "gpu":
            continue
        assert "no tuning record" not in p.stderr, p.stderr
        m = re.search(r"nearest %s:(\d+)" % re.escape(log), q.stdout)
        assert m, q.stdout
        assert _record(log, int(m.group(1)))["i"][1] == task
    err = rel_l2(outs["gpu"], outs["cpu"])
    assert err <= 1e-5, f"relative L2 error {err:g}"


def test_tasks_target_cuda():
    """kiln tasks --target cuda lists TVM's CUDA tasks with their space sizes
    (a dense of K = 128 at batch 1: tile_k over the 8 divisors of 128), and
    a 3x3 stride-1 convolution also as a Winograd task."""
    p = kiln("tasks", os.path.join(ROOT, "models", "digits", "digits.onnx"), "--input-shapes", "image:[1,1,8,8]",
             "--target", "cuda")
    heads = [ln for ln in p.stdout.splitlines() if ln.startswith("[Task")]
    assert len(heads) == 6, p.stdout
    assert "topi_nn_conv2d (direct) - Search space size: 336000" in heads[0]
    assert "topi_nn_conv2d (winograd)" in heads[1]
    assert "topi_nn_dense (direct) - Search space size: 8" in heads[4]
    p = kiln("tasks", os.path.join(ROOT, "models", "digits", "digits.onnx"), "--target", "rocm", check=False)
    assert p.returncode != 0 and "target 'rocm' is not supported" in p.stderr



@pytest.mark.parametrize("name,prefix,batch", [("mobilenet_v2", "mobilenet_v2", 8), ("mobilenet_v2", "mobilenet_v2", 128),
                                               ("resnet50", "resnet50v1", 8)])
def test_batched_model_uses_seed_log(name, prefix, batch, exported, tmp_path):
    """ResNet-50 and MobileNet-V2 with the batch set by --input-shapes take the
    seeds' batch-8 / batch-128 configs for every conv2d, depthwise and dense
    task (no fallback), and the compiled graph names the records."""
    model = exported(name)
    so = str(tmp_path / "m.so")
    log = f"{prefix}_bs_{batch}.log"
    emit = str(tmp_path / "emit")
    p = kiln("compile", model + ".onnx", "-o", so, "--input-shapes", f"data:[{batch},3,224,224]", "--target", OCL,
             "--tuning-records", os.path.join(TOPHUB, log), "--no-shipped-records", "--emit-dir", emit)
    assert "no tuning record" not in p.stderr, p.stderr
    with open(os.path.join(TOPHUB, log)) as f:
        nrec = len(f.read().splitlines())
    with open(os.path.join(emit, "graph.json")) as f:
        graph = f.read()
    used = {ln for ln in range(1, nrec + 1) if f'"{log}:{ln}"' in graph}
    assert len(used) == nrec, sorted(used)


WHOLE = [("mobilenet_v2", "mobilenet_v2_bs_1.log"), ("resnet50", "resnet50v1_bs_1.log"), ("vgg16", "vgg16_bs_1.log")]


@needs_opencl
@pytest.mark.skipif(os.environ.get("KILN_GPU_MODEL_TESTS") != "1",
                    reason="whole models on POCL take 1-10 minutes each; set KILN_GPU_MODEL_TESTS=1")
@pytest.mark.parametrize("name,log", WHOLE)
def test_whole_model_seed_log_matches_pytorch(name, log, exported, tmp_path):
    """The whole model compiled with the seeds' batch-1 log (every conv2d,
    depthwise and dense task covered) on POCL against PyTorch."""
    prefix = exported(name)
    so = str(tmp_path / (name + ".so"))
    p = kiln("compile", prefix + ".onnx", "-o", so, "--input-shapes", "data:[1,3,224,224]", "--target", OCL,
             "--tuning-records", os.path.join(TOPHUB, log), "--no-shipped-records")
    assert "no tuning record" not in p.stderr, p.stderr
    out = str(tmp_path / "out.npz")
    kiln("run", so, "--device", "opencl", "--inputs", prefix + ".input.npy", "-o", out)
    err = rel_l2(first_output(out), np.load(prefix + ".output.npy"))
    assert err <= 1e-4, f"{name}: relative L2 error {err:g}"
