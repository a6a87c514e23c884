"""Whole models on the GPU targets: digits, resnet18 and mobilenet_v2 (with
the seeds' TopHub log) compile with `kiln compile --target opencl`, run with `kiln run --device opencl`
(POCL on a machine without a GPU) and match PyTorch within 1e-4 relative L2
error; the same models' CUDA sources compile with NVRTC for sm_90 without
warnings, with registers and spills bounded."""
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from e2e_common import BUILD, ROOT, kiln

GPU_MODELS = ["resnet18", "mobilenet_v2"]


def _opencl_device():
    code = "import kiln; print(kiln.opencl(0).exist)"
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), KILN_LIBRARY_PATH=BUILD)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    return p.stdout.strip() == "True"


needs_opencl = pytest.mark.skipif(not _opencl_device(), reason="no OpenCL device (install pocl-opencl-icd)")


def first_output(path):
    """Output 0 of a `kiln run -o` file, whatever the model named it."""
    z = np.load(path)
    return z[z.files[0]]


def rel_l2(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


@needs_opencl
def test_digits_opencl(tmp_path):
    d = os.path.join(ROOT, "models", "digits")
    held = np.load(os.path.join(d, "heldout.npz"))
    images, logits = held["image"], held["logits"]
    so = str(tmp_path / "digits.so")
    kiln("compile", os.path.join(d, "digits.onnx"), "-o", so, "--input-shapes", f"image:[{len(images)},1,8,8]",
         "--target", "opencl")
    info = kiln("inspect", so).stdout
    assert "target: opencl" in info and "device kernels (6, opencl):" in info, info  # the flatten is a "__nop"
    inp = str(tmp_path / "in.npz")
    np.savez(inp, image=images)
    out = str(tmp_path / "out.npz")
    kiln("run", so, "--device", "opencl", "--inputs", inp, "-o", out)
    assert rel_l2(first_output(out), logits) <= 1e-4
    p = kiln("run", so, "--device", "cpu", check=False)
    assert p.returncode != 0 and "was compiled for opencl; it cannot run on cpu" in p.stderr
    # a device by its index: POCL has one, device 0
    out0 = str(tmp_path / "out0.npz")
    kiln("run", so, "--device", "opencl:0", "--inputs", inp, "-o", out0)
    assert rel_l2(first_output(out0), logits) <= 1e-4
    p = kiln("run", so, "--device", "opencl:1", "--inputs", inp, check=False)
    assert p.returncode != 0 and "opencl: no device 1" in p.stderr, p.stderr
    p = kiln("run", so, "--device", "opencl:x", check=False)
    assert p.returncode != 0 and "--device takes KIND or KIND:N" in p.stderr, p.stderr
    # launches are asynchronous: a kernel that failed is named where the
    # outputs are copied back (or at the profiler's synchronize)
    env = dict(os.environ, KILN_OPENCL_FAIL_KERNEL="fused_nn_max_pool2d_kernel0")
    for extra in ([], ["--profile"]):
        p = kiln("run", so, "--device", "opencl", "--inputs", inp, *extra, check=False, env=env)
        assert p.returncode != 0 and "opencl: kernel 'fused_nn_max_pool2d_kernel0' failed" in p.stderr, p.stderr


@needs_opencl
@pytest.mark.parametrize("name", GPU_MODELS)
def test_model_opencl_matches_pytorch(name, exported, tmp_path):
    prefix = exported(name)
    so = str(tmp_path / (name + ".so"))
    # mobilenet_v2 with the seeds' TopHub log (every conv2d, depthwise and
    # dense task has a record; their configs need up to 1024 threads), the
    # other with the CUDA templates' fallback configs
    seed = {"mobilenet_v2": "mobilenet_v2_bs_1.log"}.get(name)
    extra = (["--target", "opencl -max_threads_per_block=1024", "--tuning-records",
              os.path.join(ROOT, "tests", "data", "tophub", seed)] if seed else ["--target", "opencl"])
    p = kiln("compile", prefix + ".onnx", "-o", so, "--input-shapes", "data:[1,3,224,224]", *extra)
    if seed:
        assert "no tuning record" not in p.stderr, p.stderr
    out = str(tmp_path / "out.npz")
    kiln("run", so, "--device", "opencl", "--inputs", prefix + ".input.npy", "-o", out)
    got = first_output(out)
    ref = np.load(prefix + ".output.npy")
    assert got.shape == ref.shape
    err = rel_l2(got, ref)
    assert err <= 1e-4, f"{name}: relative L2 error {err:g}"


def _nvrtc_log(source):
    code = ("import sys, kiln\n"
            "src = open(sys.argv[1]).read()\n"
            "print(kiln._ffi._get_api('driver.nvrtc_compile')(src, 'sm_90', 1))\n")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), KILN_LIBRARY_PATH=BUILD)
    p = subprocess.run([sys.executable, "-c", code, source], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    return p.stdout


@pytest.mark.parametrize("name", ["digits"] + GPU_MODELS)
def test_model_cuda_sources_compile(name, exported, tmp_path):
    if name == "digits":
        onnx, shapes = os.path.join(ROOT, "models", "digits", "digits.onnx"), "image:[16,1,8,8]"
    else:
        onnx, shapes = exported(name) + ".onnx", "data:[1,3,224,224]"
    emit = tmp_path / "emit"
    p = kiln("compile", onnx, "-o", str(tmp_path / "m.so"), "--input-shapes", shapes, "--target",
             "cuda -arch=sm_90", "--emit-dir", str(emit), check=False)
    if p.returncode != 0 and "NVRTC" in p.stderr and "not found" in p.stderr:
        pytest.skip("NVRTC is not installed: " + p.stderr.strip().splitlines()[-1])
    assert p.returncode == 0, p.stderr
    src = (emit / "kernels.cu").read_text()
    assert 'extern "C" __global__' in src and "blockIdx.x" in src
    log = _nvrtc_log(str(emit / "kernels.cu"))
    assert "warning" not in log.lower(), log
    # the configs come from Kiln's shipped CUDA records (TopHub's logs:
    # exact or nearest records, no fallback): some of TopHub's tilings use
    # up to 168 registers a thread, within sm_90's 255, and none spills
    assert "no tuning record" not in p.stderr, p.stderr
    assert re.search(r'"(shipped|nearest shipped cuda\.json:\d+)"', (emit / "graph.json").read_text())
    regs = [int(x) for x in re.findall(r"Used (\d+) registers", log)]
    spills = [int(x) for x in re.findall(r"(\d+) bytes spill stores", log)]
    assert regs and max(regs) <= 255, log
    assert spills and max(spills) == 0, log


@needs_opencl
def test_tune_opencl(tmp_path):
    """kiln tune --target opencl measures the CUDA templates' candidates on
    the OpenCL device in worker processes and writes v0.2 records for
    "opencl"; kiln compile --target opencl --tuning-records applies them
    (the profile's Task column names the lines) and the model still matches
    its held-out logits."""
    d = os.path.join(ROOT, "models", "digits")
    onnx = os.path.join(d, "digits.onnx")
    shapes = ["--input-shapes", "image:[1,1,8,8]"]
    log = str(tmp_path / "digits_opencl.json")
    # task 3: the direct conv2d of (1,16,4,4); task 5: the first dense
    p = kiln("tune", onnx, *shapes, "--target", "opencl", "-o", log, "--tasks", "3,5", "--trials", "3",
             "--tuner", "random", "--number", "2", "--repeat", "2", "--parallel", "2", "--verify", "0",
             "--build-timeout", "120", "--timeout", "60")
    assert "on opencl with the random tuner" in p.stderr, p.stderr
    assert re.search(r"\[Task  5/ 6\]\s+Current/Best:.*Progress: \(3/3\)", p.stderr), p.stderr
    recs = [json.loads(l) for l in open(log)]
    assert len(recs) == 6
    assert {r["input"][1] for r in recs} == {"topi_nn_conv2d", "topi_nn_dense"}
    assert all(r["input"][0] == "opencl" and r["version"] == 0.2 for r in recs)
    ok = [r for r in recs if r["result"][1] == 0]
    assert len(ok) >= 2 and all(0 < c < 1 for r in ok for c in r["result"][0])
    so = str(tmp_path / "digits.so")
    kiln("compile", onnx, *shapes, "--target", "opencl", "--tuning-records", log, "-o", so)
    held = np.load(os.path.join(d, "heldout.npz"))
    inp, out = str(tmp_path / "in.npz"), str(tmp_path / "out.npz")
    np.savez(inp, image=held["image"][:1])
    prof = kiln("run", so, "--device", "opencl", "--inputs", inp, "-o", out, "--profile").stdout
    assert rel_l2(first_output(out), held["logits"][:1]) <= 1e-4
    assert re.search(r"fused_nn_conv2d_nn_bias_add_nn_relu_1 .*digits_opencl\.json:\d+", prof), prof
    assert re.search(r"fused_nn_dense_add_nn_relu .*digits_opencl\.json:\d+", prof), prof


def test_tune_cuda_needs_the_device(tmp_path):
    """Tuning for cuda measures on the device: without a driver the command
    fails at once with the driver's error, in one line."""
    code = "import kiln; print(kiln.cuda(0).exist)"
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), KILN_LIBRARY_PATH=BUILD)
    if subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env).stdout.strip() == "True":
        pytest.skip("a CUDA device is present")
    onnx = os.path.join(ROOT, "models", "digits", "digits.onnx")
    p = kiln("tune", onnx, "--target", "cuda", "-o", str(tmp_path / "r.json"), "--trials", "2", check=False)
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    assert p.returncode != 0 and len(lines) == 1, p.stderr
    assert "cuda" in lines[0] and "measures every candidate on the device" in lines[0], p.stderr
    assert not os.path.exists(str(tmp_path / "r.json"))
