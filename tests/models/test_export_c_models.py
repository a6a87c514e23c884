"""End-to-end: the five torchvision models exported as standalone C
(kiln compile --emit c), built with the generated Makefile and example
main.c only (no Kiln library) under -std=c99 -Wall -Wextra -Werror, match
PyTorch within 1e-4 relative L2 error; mobilenet_v2 also as --isa generic
--freestanding, whose model sources link with -ffreestanding -nostdlib.

CI runs a subset that covers each compiler and each weights mode within
its time budget (compiling large models' weights as C arrays is slow:
the larger models use --weights separate and build at -O1; VGG-16 is
left to the full run); KILN_EXPORT_C_ALL=1 runs all five models with
both gcc and clang, embedded weights for all but VGG-16, at -O2.
"""
import json
import os
import shutil
import subprocess

import numpy as np
import pytest

from e2e_common import kiln

ALL = os.environ.get("KILN_EXPORT_C_ALL") == "1"
STRICT = "-std=c99 -Wall -Wextra -Werror"

# (model, compiler, weights, optimization) in CI
SUBSET = [
    ("squeezenet1_1", "gcc", "embedded", "-O2"),
    ("squeezenet1_1", "clang", "embedded", "-O2"),
    ("mobilenet_v2", "gcc", "embedded", "-O2"),
    ("resnet18", "clang", "separate", "-O1"),
    ("resnet50", "gcc", "separate", "-O1"),
]
FULL = [(m, cc, "separate" if m == "vgg16" else "embedded", "-O2")
        for m in ["squeezenet1_1", "mobilenet_v2", "resnet18", "resnet50", "vgg16"] for cc in ["gcc", "clang"]]


def rel_l2(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def build_and_run(d, name, prefix, cc, opt, weights):
    p = subprocess.run(["make", "-s", "-j2", f"CC={cc}", f"CFLAGS={opt} {STRICT}"], cwd=d, capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stdout + p.stderr[-4000:]
    args = [str(d / "example")]
    if weights == "separate":
        args += ["-w", str(d / f"{name}.bin")]
    out = d / "out.npy"
    p = subprocess.run(args + [prefix + ".input.npy", str(out)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return np.load(out)


@pytest.mark.parametrize("name,cc,weights,opt", FULL if ALL else SUBSET)
def test_exported_c_matches_pytorch(name, cc, weights, opt, exported, tmp_path):
    if not shutil.which(cc):
        pytest.skip(f"{cc} is not installed")
    prefix = exported(name)
    d = tmp_path / name
    kiln("compile", prefix + ".onnx", "--input-shapes", "data:[1,3,224,224]", "--emit", "c", "-o", str(d),
         "--prefix", name, "--weights", weights, "--quiet-fallback")
    got = build_and_run(d, name, prefix, cc, opt, weights)
    ref = np.load(prefix + ".output.npy")
    assert got.shape == ref.shape
    assert rel_l2(got, ref) <= 1e-4, f"{name} ({cc}): relative L2 error {rel_l2(got, ref):g}"


def test_mobilenet_v2_generic_freestanding(exported, tmp_path):
    prefix = exported("mobilenet_v2")
    d = tmp_path / "mb"
    kiln("compile", prefix + ".onnx", "--input-shapes", "data:[1,3,224,224]", "--emit", "c", "-o", str(d),
         "--prefix", "mobilenet_v2", "--isa", "generic", "--freestanding", "--weights", "separate",
         "--quiet-fallback")
    src = (d / "mobilenet_v2.c").read_text()
    assert "vector_size" not in src and "#include <math.h>" not in src
    # the model alone: no C library at all, nothing undefined
    p = subprocess.run(["gcc", "-O1", "-pedantic", *STRICT.split(), "-ffreestanding", "-nostdlib", "-shared", "-fPIC",
                        "-Wl,--no-undefined", "-o", "libmb.so", "mobilenet_v2.c"], cwd=d, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-4000:]
    # with the example's own I/O
    got = build_and_run(d, "mobilenet_v2", prefix, "gcc", "-O1", "separate")
    ref = np.load(prefix + ".output.npy")
    assert rel_l2(got, ref) <= 1e-4


def test_same_kernels_as_the_shared_library(exported, tmp_path):
    """Each fused function of the export has the task and config (tuned,
    shipped, fallback; Winograd where alter_layout chose it) the shared
    library's graph JSON gives the same node."""
    prefix = exported("squeezenet1_1")
    d = tmp_path / "c"
    kiln("compile", prefix + ".onnx", "--input-shapes", "data:[1,3,224,224]", "--emit", "c", "-o", str(d),
         "--prefix", "sq", "--weights", "separate", "--quiet-fallback")
    kiln("compile", prefix + ".onnx", "--input-shapes", "data:[1,3,224,224]", "-o", str(tmp_path / "sq.so"),
         "--emit-dir", str(tmp_path / "so"), "--quiet-fallback")
    graph = json.load(open(tmp_path / "so" / "graph.json"))
    so = {n["name"]: (n["attrs"].get("kiln_task"), n["attrs"].get("kiln_config"))
          for n in graph["nodes"] if n["op"] == "tvm_op"}
    meta = json.load(open(d / "metadata.json"))
    c = {k["name"]: (k["task"], k["config"]) for k in meta["kernels"]}
    assert c == so
    assert any(t and t.startswith("conv2d_NCHWc_winograd.x86") for t, _ in c.values())
