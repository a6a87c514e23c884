"""kiln compile --emit c: the bundled digits model as standalone C, built
with gcc and clang (-std=c99 -Wall -Wextra -Werror) and the generated
example main.c only, matched against PyTorch's logits; the freestanding
build links with -nostdlib; the objects have no malloc, no writable
globals and nothing from libkiln; two threads with two workspaces agree
with one; the freestanding math file keeps its documented error bounds;
bad options fail with a clear message.  (The torchvision models are in
tests/models/test_models.py.)"""
import json
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

from e2e_common import ROOT, cpu_has, kiln, run

DIGITS = os.path.join(ROOT, "models", "digits")
STRICT = "-O2 -std=c99 -Wall -Wextra -Werror"
# what a model's object may take from outside: the C library's string.h and
# math.h, the threads it was asked for
ALLOWED_UNDEFINED = re.compile(
    r"^(memcpy|memmove|memset|(exp|log|sqrt|tanh|erf|pow|floor|ceil|nearbyint|trunc|fabs|fmod|sin|cos|tan|"
    r"asin|acos|atan|sinh|cosh|asinh|acosh|atanh)f?|pthread_(create|join)|GOMP_\w+|omp_\w+|_GLOBAL_OFFSET_TABLE_)$")


def have(cc):
    return shutil.which(cc) is not None


def heldout():
    h = np.load(os.path.join(DIGITS, "heldout.npz"))
    return h["image"], h["label"], h["logits"]


def export(tmp_path, name, *opts, batch=None):
    images, _, _ = heldout()
    n = batch or len(images)
    d = tmp_path / name
    kiln("compile", os.path.join(DIGITS, "digits.onnx"), "--input-shapes", f"image:[{n},1,8,8]", "--emit", "c",
         "-o", str(d), "--prefix", "digits", "--quiet-fallback", *opts)
    return d


def make(d, cc="gcc", cflags=STRICT):
    p = run(["make", "-s", f"CC={cc}", f"CFLAGS={cflags}"], cwd=d)
    assert p.returncode == 0, p.stdout + p.stderr
    return d / "example"


def run_example(d, images, extra=()):
    np.save(d / "in.npy", images)
    p = run([str(d / "example"), *extra, str(d / "in.npy"), str(d / "out.npy")], cwd=d)
    assert p.returncode == 0, p.stdout + p.stderr
    return np.load(d / "out.npy")


def rel_l2(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def check_matches(got):
    _, labels, logits = heldout()
    assert got.shape == logits.shape
    assert rel_l2(got, logits) <= 1e-4
    ref = dict(line.split() for line in open(os.path.join(DIGITS, "reference.txt")))
    assert int((got.argmax(1) == labels).sum()) == int(ref["pytorch_correct"])


def symbols(obj):
    """(undefined, defined writable) symbol names of an object file."""
    out = run(["nm", str(obj)]).stdout.splitlines()
    undef = [line.split()[-1] for line in out if line.split()[0] == "U"]
    writable = [line.split()[-1] for line in out if len(line.split()) == 3 and line.split()[1] in "dDbBcCgGsS"]
    return undef, writable


@pytest.mark.parametrize("cc", ["gcc", "clang"])
def test_digits_c_matches_pytorch(tmp_path, cc):
    if not have(cc):
        pytest.skip(f"{cc} is not installed")
    d = export(tmp_path, "digits_" + cc)
    files = sorted(os.listdir(d))
    for f in ["digits.h", "digits.c", "digits_weights0.c", "main.c", "Makefile", "CMakeLists.txt", "metadata.json"]:
        assert f in files
    header = (d / "digits.h").read_text()
    assert "int digits_run(const float *image, float *output0, void *workspace);" in header
    assert re.search(r"#define DIGITS_WORKSPACE_BYTES \d+", header)
    assert '#define DIGITS_INPUT0_SHAPE {297, 1, 8, 8}' in header
    make(d, cc)
    images, _, _ = heldout()
    check_matches(run_example(d, images))


@pytest.mark.parametrize("cc", ["gcc", "clang"])
def test_digits_generic_freestanding_links_without_libc(tmp_path, cc):
    if not have(cc):
        pytest.skip(f"{cc} is not installed")
    d = export(tmp_path, "fs_" + cc, "--isa", "generic", "--freestanding")
    src = (d / "digits.c").read_text()
    assert "#include <math.h>" not in src and "#include <string.h>" not in src
    assert "__attribute__((vector_size" not in src  # generic: plain C99
    # the model alone: freestanding, no C library, nothing left undefined
    lib = d / "libfs.so"
    p = run([cc, "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", "-O2", "-ffreestanding", "-nostdlib", "-shared",
             "-fPIC", "-Wl,--no-undefined", "-o", str(lib), "digits.c", "digits_weights0.c"], cwd=d)
    assert p.returncode == 0, p.stderr
    undef, writable = symbols(lib)
    assert undef == [], undef
    # plus the example's own I/O
    make(d, cc, STRICT + " -pedantic")
    images, _, _ = heldout()
    check_matches(run_example(d, images))


@pytest.mark.parametrize("opts", [(), ("--isa", "generic", "--freestanding"), ("--threads", "pthreads"),
                                  ("--threads", "openmp"), ("--weights", "separate")])
def test_no_malloc_no_writable_globals_no_libkiln(tmp_path, opts):
    d = export(tmp_path, "nm", *opts, batch=4)
    make(d)
    for obj in d.glob("digits*.o"):
        undef, writable = symbols(obj)
        bad = [s for s in undef if not ALLOWED_UNDEFINED.match(s) and not s.startswith("digits_w")]
        assert bad == [], f"{obj.name} needs {bad}"
        assert not any(s.startswith("kiln") for s in undef)
        assert writable == [], f"{obj.name} has writable globals {writable}"
    text = (d / "digits.c").read_text()
    for word in ["malloc", "calloc", "realloc", "free(", "kiln_runtime", "KilnValue"]:
        assert word not in text


TWO_THREADS = r"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "digits.h"

#define N DIGITS_INPUT0_ELEMS
#define M DIGITS_OUTPUT0_ELEMS
typedef struct { const float *in; float *out; void *ws; int reps, rc; } Job;
static void *work(void *p) {
  Job *j = p;
  for (int r = 0; r < j->reps && !j->rc; r++) j->rc = digits_run(j->in, j->out + (size_t)r * M, j->ws);
  return 0;
}
static void *ws_alloc(void) {
  void *p = 0;
  return posix_memalign(&p, DIGITS_WORKSPACE_ALIGN, DIGITS_WORKSPACE_BYTES ? DIGITS_WORKSPACE_BYTES : 1) ? 0 : p;
}
int main(void) {
  enum { REPS = 20 };
  static float in[2][N], ref[2][M], out[2][REPS * M];
  srand(7);
  for (int t = 0; t < 2; t++)
    for (int i = 0; i < N; i++) in[t][i] = (float)rand() / RAND_MAX * 2 - 1;
  void *ws1 = ws_alloc();
  for (int t = 0; t < 2; t++)
    if (digits_run(in[t], ref[t], ws1)) return 1;
  if (!memcmp(ref[0], ref[1], sizeof ref[0])) return 2; /* different inputs must differ */
  Job jobs[2] = {{in[0], out[0], ws1, REPS, 0}, {in[1], out[1], ws_alloc(), REPS, 0}};
  pthread_t th[2];
  for (int t = 0; t < 2; t++) pthread_create(&th[t], 0, work, &jobs[t]);
  for (int t = 0; t < 2; t++) pthread_join(th[t], 0);
  for (int t = 0; t < 2; t++) {
    if (jobs[t].rc) return 3;
    for (int r = 0; r < REPS; r++)
      if (memcmp(out[t] + r * M, ref[t], sizeof ref[t])) return printf("thread %d run %d differs\n", t, r), 4;
  }
  if (digits_run(in[0], ref[0], (char *)ws1 + 1) != -1) return 5; /* misaligned workspace */
  printf("ok\n");
  return 0;
}
"""


@pytest.mark.parametrize("opts", [(), ("--threads", "pthreads")])
def test_two_threads_two_workspaces(tmp_path, opts):
    d = export(tmp_path, "mt", *opts, batch=16)
    make(d)
    (d / "two.c").write_text(TWO_THREADS)
    p = run(["gcc", "-O2", "-std=gnu99", "-Wall", "-Wextra", "-Werror", "-pthread", "-o", "two", "two.c", "libdigits.a",
             "-lm"], cwd=d)
    assert p.returncode == 0, p.stderr
    p = run(["./two"], cwd=d)
    assert p.returncode == 0 and p.stdout.strip() == "ok", (p.returncode, p.stdout)


def test_separate_weights(tmp_path):
    d = export(tmp_path, "sep", "--weights", "separate")
    assert not list(d.glob("digits_weights*.c"))
    header = (d / "digits.h").read_text()
    assert "void *workspace, const void *weights);" in header
    size = int(re.search(r"#define DIGITS_WEIGHTS_BYTES (\d+)", header).group(1))
    assert os.path.getsize(d / "digits.bin") == size
    make(d)
    images, _, _ = heldout()
    check_matches(run_example(d, images, ["-w", str(d / "digits.bin")]))
    # a damaged file is refused
    blob = bytearray((d / "digits.bin").read_bytes())
    blob[-1] ^= 1
    (d / "bad.bin").write_bytes(bytes(blob))
    p = run([str(d / "example"), "-w", str(d / "bad.bin"), str(d / "in.npy"), str(d / "out.npy")], cwd=d)
    assert p.returncode != 0 and "not the weights of this export" in p.stderr


def test_math_file_error_bounds(tmp_path):
    d = export(tmp_path, "math", "--isa", "generic", "--freestanding", batch=1)
    text = (d / "kiln_math.h").read_text()
    bounds = {m.group(1): float(m.group(2)) for m in re.finditer(r"kiln_(\w+)\s+.*<= ([\d.]+) ulp", text)}
    assert set(bounds) >= {"pow_expf", "logf", "sqrtf"}, bounds
    harness = r"""
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "kiln_math.h"
static double ulp(double r) { int e; double a = fabs(r); if (a < FLT_MIN) return ldexp(1.0, -149); frexp(a, &e); return ldexp(1.0, e - 24); }
static double worst(float (*f)(float), double (*d)(double), float lo, float hi) {
  double w = 0;
  for (unsigned long long u = 0; u < 0x100000000ull; u += 997) {
    unsigned v = (unsigned)u; float x; memcpy(&x, &v, 4);
    if (!(x >= lo && x <= hi)) continue;
    double ref = d(x), got = f(x);
    if (fabs(ref) > FLT_MAX) { if (!isinf(got)) return 1e9; continue; }
    if (fabs(got - ref) / ulp(ref) > w) w = fabs(got - ref) / ulp(ref);
  }
  return w;
}
static double sqrt_(double x) { return sqrt(x); }
int main(void) {
  printf("pow_expf %g\nlogf %g\nsqrtf %g\n", worst(kiln_pow_expf, exp, -110, 89),
         worst(kiln_logf, log, 0, FLT_MAX), worst(kiln_sqrtf, sqrt_, 0, FLT_MAX));
  printf("floorf %g\nnearbyintf %g\n", worst(kiln_floorf, floor, -1e9f, 1e9f), worst(kiln_nearbyintf, nearbyint, -1e9f, 1e9f));
  return 0;
}
"""
    (d / "bounds.c").write_text(harness)
    p = run(["gcc", "-O2", "-std=c99", "-Wall", "-Wextra", "-Werror", "-o", "bounds", "bounds.c", "-lm"], cwd=d)
    assert p.returncode == 0, p.stderr
    p = run(["./bounds"], cwd=d)
    measured = {line.split()[0]: float(line.split()[1]) for line in p.stdout.splitlines()}
    for name, bound in bounds.items():
        if name in measured:
            assert measured[name] <= bound, f"kiln_{name}: {measured[name]} ulp, documented {bound}"
    assert measured["floorf"] == 0 and measured["nearbyintf"] == 0


def test_metadata_and_inspect(tmp_path):
    d = export(tmp_path, "meta", batch=2)
    meta = json.loads((d / "metadata.json").read_text())
    assert meta["format"] == "kiln-c-export-1" and meta["prefix"] == "digits"
    assert meta["inputs"][0]["shape"] == [2, 1, 8, 8] and meta["inputs"][0]["dtype"] == "float32"
    assert meta["workspace_bytes"] > 0 and len(meta["kernels"]) >= 4
    header = (d / "digits.h").read_text()
    assert f'#define DIGITS_CHECKSUM "{meta["checksum"]}"' in header
    # the plan: buffers live at the same time never overlap
    plan = meta["memory_plan"]
    for a in plan:
        assert a["offset"] % 64 == 0 and a["offset"] + a["bytes"] <= meta["workspace_bytes"]
        for b in plan:
            if a is not b and a["live"][0] <= b["live"][1] and b["live"][0] <= a["live"][1]:
                assert a["offset"] + a["bytes"] <= b["offset"] or b["offset"] + b["bytes"] <= a["offset"], (a, b)
    p = kiln("inspect", str(d))
    assert "standalone C" in p.stdout and "digits_run" in p.stdout and meta["checksum"] in p.stdout
    assert re.search(r"checksum: [0-9a-f]{16} ok", p.stdout), p.stdout
    (d / "digits.c").write_text((d / "digits.c").read_text() + "\n/* edited */\n")
    p = kiln("inspect", str(d), check=False)
    assert "MISMATCH (digits.c changed" in p.stdout, p.stdout


@pytest.mark.parametrize("args,message", [
    (["--emit", "c", "--prefix", "9lives"], "--prefix '9lives' is not a C identifier"),
    (["--emit", "c", "--threads", "fibers"], "--threads 'fibers': expected one of none, pthreads, openmp"),
    (["--emit", "c", "--isa", "sse9"], "--isa 'sse9': expected one of native, generic, avx2, avx512"),
    (["--emit", "c", "--weights", "cloud"], "--weights 'cloud': expected one of embedded, separate"),
    (["--emit", "c", "--freestanding", "--threads", "pthreads"], "--freestanding cannot use --threads pthreads"),
    (["--emit", "wasm"], "--emit 'wasm': expected so"),
    (["--isa", "avx2"], "--isa applies to standalone C only: add --emit c"),
    (["--emit", "c", "--isa", "native", "--target", "llvm -mcpu=x86-64-v3"],
     "--isa native builds for this machine (-march=native), but --target 'llvm -mcpu=x86-64-v3' names "
     "-mcpu=x86-64-v3: leave --isa out to build for x86-64-v3, or leave -mcpu out to build for this machine"),
    (["--emit", "c", "--isa", "avx512", "--target", "llvm -mcpu=haswell"],
     "--isa avx512 blocks for 16 float lanes, but --target 'llvm -mcpu=haswell' names a CPU with 8: leave "
     "--isa out to build for -mcpu=haswell, or pick the ISA of that width"),
])
def test_bad_options(tmp_path, args, message):
    p = kiln("compile", os.path.join(DIGITS, "digits.onnx"), "--input-shapes", "image:[1,1,8,8]", "-o",
             str(tmp_path / "out"), *args, check=False)
    assert p.returncode != 0
    assert message in p.stderr, p.stderr


def test_freestanding_math_model(tmp_path):
    """exp, tanh, erf, sigmoid (kiln_vmath.h), log, sqrt, pow (kiln_math.h)
    with no C library: links with -nostdlib, matches NumPy."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    nodes = [helper.make_node("Abs", ["x"], ["a"]), helper.make_node("Log", ["a"], ["l"]),
             helper.make_node("Sqrt", ["a"], ["s"]), helper.make_node("Exp", ["x"], ["e"]),
             helper.make_node("Tanh", ["x"], ["t"]), helper.make_node("Erf", ["x"], ["f"]),
             helper.make_node("Sigmoid", ["x"], ["g"]), helper.make_node("Pow", ["a", "x"], ["p"]),
             helper.make_node("Sum", ["l", "s", "e", "t", "f", "g", "p"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    path = str(tmp_path / "m.onnx")
    onnx.save(m, path)
    d = tmp_path / "fs"
    kiln("compile", path, "--emit", "c", "-o", str(d), "--prefix", "mathy", "--isa", "generic", "--freestanding")
    p = run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-O2", "-ffreestanding", "-nostdlib", "-shared", "-fPIC",
             "-Wl,--no-undefined", "-o", "libm.so", "mathy.c"], cwd=d)
    assert p.returncode == 0, p.stderr
    make(d)
    x = np.random.RandomState(3).uniform(-2.5, 2.5, 64).astype(np.float32)
    x[x == 0] = 0.5
    np.save(d / "x.npy", x)
    p = run(["./example", "x.npy", "y.npy"], cwd=d)
    assert p.returncode == 0, p.stderr
    import math
    a = np.abs(x).astype(np.float64)
    ref = (np.log(a) + np.sqrt(a) + np.exp(x) + np.tanh(x) + np.array([math.erf(v) for v in x])
           + 1 / (1 + np.exp(-x)) + a ** x)
    assert np.allclose(np.load(d / "y.npy"), ref, rtol=1e-5, atol=1e-5)


def test_freestanding_refuses_functions_it_lacks(tmp_path):
    """A model using sin cannot be freestanding: the error names it."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    g = helper.make_graph([helper.make_node("Sin", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    path = str(tmp_path / "sin.onnx")
    onnx.save(m, path)
    p = kiln("compile", path, "--emit", "c", "-o", str(tmp_path / "s"), "--freestanding", check=False)
    assert p.returncode != 0 and "sin" in p.stderr and "--freestanding" in p.stderr, p.stderr
    # without --freestanding it exports and matches NumPy
    kiln("compile", path, "--emit", "c", "-o", str(tmp_path / "s2"), "--prefix", "sinm")
    d = tmp_path / "s2"
    make(d)
    x = np.linspace(-3, 3, 4).astype(np.float32)
    np.save(d / "x.npy", x)
    p = run(["./example", "x.npy", "y.npy"], cwd=d)
    assert p.returncode == 0, p.stderr
    assert np.allclose(np.load(d / "y.npy"), np.sin(x), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("opts", [(), ("--isa", "generic", "--freestanding")])
def test_outputs_no_kernel_writes(tmp_path, opts):
    """A model output that is an input, or the same tensor twice: copied
    into the caller's arrays (memcpy, or a byte loop when freestanding)."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Identity", ["x"], ["i"]),
             helper.make_node("Identity", ["r"], ["r2"])]
    vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [3, 5]) for n in ["x", "r", "i", "r2"]]
    g = helper.make_graph(nodes, "g", vi[:1], vi[1:])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    path = str(tmp_path / "ids.onnx")
    onnx.save(m, path)
    d = tmp_path / "ids"
    kiln("compile", path, "--emit", "c", "-o", str(d), "--prefix", "ids", *opts)
    header = (d / "ids.h").read_text()
    assert "int ids_run(const float *x, float *output0, float *output1, float *output2, void *workspace);" in header
    make(d)
    x = np.random.RandomState(5).randn(3, 5).astype(np.float32)
    np.save(d / "x.npy", x)
    p = run(["./example", "x.npy", "a.npy", "b.npy", "c.npy"], cwd=d)
    assert p.returncode == 0, p.stderr
    assert np.array_equal(np.load(d / "a.npy"), np.maximum(x, 0))
    assert np.array_equal(np.load(d / "b.npy"), x)
    assert np.array_equal(np.load(d / "c.npy"), np.maximum(x, 0))


def test_cmake_snippet(tmp_path):
    """The generated CMakeLists.txt builds the library and the example."""
    if not have("cmake"):
        pytest.skip("cmake is not installed")
    d = export(tmp_path, "nested/src", "--threads", "openmp", batch=3)
    b = tmp_path / "cbuild"
    for args in (["cmake", "-S", str(d), "-B", str(b)], ["cmake", "--build", str(b)]):
        p = run(args)
        assert p.returncode == 0, p.stdout + p.stderr
    images, _, logits = heldout()
    np.save(d / "in.npy", images[:3])
    p = run([str(b / "digits_example"), str(d / "in.npy"), str(d / "out.npy")])
    assert p.returncode == 0, p.stderr
    assert rel_l2(np.load(d / "out.npy"), logits[:3]) <= 1e-4


def test_tuning_records_apply(tmp_path):
    """A user's record is the config of its kernel, as in the shared
    library; the export names it in NAME.c and metadata.json."""
    shipped = os.path.join(ROOT, "records", "x86_avx512.json")
    line = open(shipped).readline()
    assert '"conv2d_NCHWc.x86"' in line and "[1, 1, 8, 8]" in line
    rec = tmp_path / "tuned.json"
    rec.write_text(line)
    d = export(tmp_path, "rec", "--isa", "avx512", "--tuning-records", str(rec), "--no-shipped-records", batch=1)
    meta = json.loads((d / "metadata.json").read_text())
    configs = {k["name"]: k["config"] for k in meta["kernels"] if k["task"]}
    assert configs["fused_nn_contrib_conv2d_NCHWc_add_nn_relu"] == "tuned.json:1", configs
    assert list(configs.values()).count("fallback") == len(configs) - 1
    assert "config tuned.json:1]" in (d / "digits.c").read_text()
    # avx512 code builds on any x86-64 host compiler
    p = run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-O1", "-mavx512f", "-mavx512vl", "-mavx512bw",
             "-mavx512dq", "-mfma", "-c", "digits.c"], cwd=d)
    assert p.returncode == 0, p.stderr


def _isa_neutral(text, isa):
    return text.replace(f'"{isa}"', '"ISA"').replace(f"isa {isa},", "isa ISA,")


def test_target_mcpu_builds_for_that_cpu(tmp_path):
    """Without --isa, a --target naming another CPU (-mcpu) gets kernels
    for that CPU and its -march, not this machine's: the same kernels as
    --isa of that width, and a build that matches PyTorch."""
    d = export(tmp_path, "v3", "--target", "llvm -mcpu=x86-64-v3")
    make_text = (d / "Makefile").read_text()
    assert "KILN_FLAGS = -march=x86-64-v3 " in make_text, make_text
    assert "-march=native" not in make_text
    assert "-march=x86-64-v3" in (d / "CMakeLists.txt").read_text()
    assert '#define DIGITS_ISA "x86-64-v3"' in (d / "digits.h").read_text()
    assert json.loads((d / "metadata.json").read_text())["isa"] == "x86-64-v3"
    # the kernels are those of the 8-lane (AVX2) class
    avx2 = export(tmp_path, "avx2", "--isa", "avx2")
    assert _isa_neutral((d / "digits.c").read_text(), "x86-64-v3") == \
        _isa_neutral((avx2 / "digits.c").read_text(), "avx2")
    if cpu_has("avx512f"):  # this machine's own are 16-lane kernels: the target changed them
        native = export(tmp_path, "native")
        assert _isa_neutral((native / "digits.c").read_text(), "native") != \
            _isa_neutral((d / "digits.c").read_text(), "x86-64-v3")
    if cpu_has("avx2") and cpu_has("fma"):
        make(d)
        check_matches(run_example(d, heldout()[0]))
