"""kiln compile/tasks/run with --precision bf16 (docs/bf16.md): an MLP's
dense layers become dense_pack_bf16.x86 tasks, the module's parameters
take about half the bytes of the fp32 build, the outputs stay within the
documented bound of the fp32 build's (relative L2 error 1e-2) and the
profile's Task column names the template; a bad word, a CPU without
AVX512-BF16 and -O2 are refused with the reason."""
import os
import re

import numpy as np
import pytest

from e2e_common import cpu_has_bf16, kiln

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    d = tmp_path_factory.mktemp("bf16")
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(256, 384), torch.nn.GELU(), torch.nn.Linear(384, 100), torch.nn.ReLU(),
                            torch.nn.Linear(100, 10))
    path = str(d / "mlp.onnx")
    torch.onnx.export(m, torch.randn(4, 256), path, input_names=["x"], output_names=["y"], opset_version=13)
    np.save(str(d / "x.npy"), np.random.default_rng().standard_normal((4, 256)).astype(np.float32))
    return d


@pytest.mark.skipif(not cpu_has_bf16(), reason="this CPU lacks AVX512-BF16 (the refusal is tested below)")
def test_compile_tasks_run(mlp):
    d = str(mlp)
    t = kiln("tasks", d + "/mlp.onnx", "--precision", "bf16").stdout
    assert t.count("dense_pack_bf16.x86") == 3, t
    sizes = {}
    for prec in ("fp32", "bf16"):
        out = kiln("compile", d + "/mlp.onnx", "--precision", prec, "-o", f"{d}/{prec}.so", "--quiet-fallback").stdout
        sizes[prec] = os.path.getsize(f"{d}/{prec}.so")
        assert re.search(r"\d+ parameters, [\d.]+ MB", out), out
        kiln("run", f"{d}/{prec}.so", "-i", d + "/x.npy", "-o", f"{d}/{prec}.npz")
    # 0.5 MB of fp32 weights become 0.25 MB
    assert sizes["fp32"] - sizes["bf16"] > 200_000, sizes
    y32, y16 = (np.load(f"{d}/{p}.npz")["y"] for p in ("fp32", "bf16"))
    err = np.linalg.norm(y16 - y32) / np.linalg.norm(y32)
    assert 1e-7 < err < 1e-2, err
    prof = kiln("run", f"{d}/bf16.so", "-i", d + "/x.npy", "--profile").stdout
    assert "dense_pack_bf16.x86 [(4,256),(384,256)] bf16" in prof, prof


def test_errors(mlp):
    d = str(mlp)
    p = kiln("compile", d + "/mlp.onnx", "--precision", "fp16", "-o", d + "/x.so", check=False)
    assert p.returncode != 0 and "precision 'fp16': expected fp32 (the default) or bf16" in p.stderr, p.stderr
    env = dict(os.environ, KILN_CPU_NO_BF16="1")
    p = kiln("compile", d + "/mlp.onnx", "--precision", "bf16", "-o", d + "/x.so", check=False, env=env)
    assert p.returncode == 1 and "needs a CPU with AVX512-BF16" in p.stderr, p.stderr
    if cpu_has_bf16():
        p = kiln("tasks", d + "/mlp.onnx", "--precision", "bf16", "-O", "2", check=False)
        assert p.returncode != 0 and "needs opt level 3" in p.stderr, p.stderr


@pytest.mark.skipif(not cpu_has_bf16(), reason="this CPU lacks AVX512-BF16 (the refusal is tested below)")
@pytest.mark.parametrize("cpu", ["znver5", "emeraldrapids"])
def test_conv_prefetches_its_weights(tmp_path, cpu):
    """A 1x1 conv with 512 KiB of float32 weights at 7 x 7 takes
    conv2d_NCHWc.x86's prefetch_w (the next register block's bfloat16
    weights touched among this block's multiply-adds) in both forms of
    bf16_dot (vdpbf16ps on znver5, fma on emeraldrapids); the output stays
    within the bound of the fp32 build's."""
    torch.manual_seed(1)
    m = torch.nn.Sequential(torch.nn.Conv2d(512, 256, 1), torch.nn.ReLU())
    path = str(tmp_path / "c.onnx")
    torch.onnx.export(m, torch.randn(1, 512, 7, 7), path, input_names=["x"], output_names=["y"], opset_version=13)
    np.save(str(tmp_path / "x.npy"), np.random.default_rng(1).standard_normal((1, 512, 7, 7)).astype(np.float32))
    target = ["--target", f"llvm -mcpu={cpu}"]
    for prec in ("fp32", "bf16"):
        out = tmp_path / prec
        kiln("compile", path, "--precision", prec, "-o", f"{out}.so", "--emit-dir", str(out), "--quiet-fallback", *target)
        kiln("run", f"{out}.so", "-i", str(tmp_path / "x.npy"), "-o", f"{out}.npz")
    src = "".join(p.read_text() for p in (tmp_path / "bf16").glob("*.c"))
    assert "conv2d_NCHWc_bf16" in src and "__builtin_prefetch" in src, src[:2000]
    y32, y16 = (np.load(f"{tmp_path}/{p}.npz")["y"] for p in ("fp32", "bf16"))
    err = np.linalg.norm(y16 - y32) / np.linalg.norm(y32)
    assert 1e-7 < err < 1e-2, err


@pytest.mark.skipif(not cpu_has_bf16(), reason="this CPU lacks AVX512-BF16")
def test_dense_block_of_vectors(tmp_path):
    """dense_pack_bf16.x86's fallback takes a register block of two or three
    vectors of 16 columns (32 x 12 rows for N = 256, 48 x 8 for N = 768)
    on znver5, each vector one VDPBF16PS of 16 lanes (a 32- or 48-column
    block is never one vector type of that width); the outputs stay within
    the bound of the fp32 build's."""
    torch.manual_seed(2)
    m = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 768))
    path = str(tmp_path / "d.onnx")
    torch.onnx.export(m, torch.randn(24, 256), path, input_names=["x"], output_names=["y"], opset_version=13)
    np.save(str(tmp_path / "x.npy"), np.random.default_rng(2).standard_normal((24, 256)).astype(np.float32))
    for prec in ("fp32", "bf16"):
        out = tmp_path / prec
        kiln("compile", path, "--precision", prec, "-o", f"{out}.so", "--emit-dir", str(out), "--quiet-fallback",
             "--target", "llvm -mcpu=znver5")
        kiln("run", f"{out}.so", "-i", str(tmp_path / "x.npy"), "-o", f"{out}.npz")
    tasks = kiln("tasks", path, "--precision", "bf16", "--target", "llvm -mcpu=znver5").stdout
    assert "dense_pack_bf16.x86" in tasks, tasks
    src = "".join(p.read_text() for p in (tmp_path / "bf16").glob("*.c"))
    assert "dense_pack_bf16" in src and "kiln_bf16_dot_acc_f32x16" in src, src[:2000]
    wide = re.search(r"kv_f32x(32|48|64)\b", src)
    assert not wide, wide.group(0)
    y32, y16 = (np.load(f"{tmp_path}/{p}.npz")["y"] for p in ("fp32", "bf16"))
    err = np.linalg.norm(y16 - y32) / np.linalg.norm(y32)
    assert 1e-7 < err < 1e-2, err
