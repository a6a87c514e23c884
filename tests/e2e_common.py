"""Shared pieces of the end-to-end tests (tests/cli and tests/models, whose
conftest.py files import this): the kiln binary, running commands, the
exported torchvision models (tools/export_models.py, cached in build/),
ONNX Runtime in the Python that has it (ort_python, ort_fixture, ort_run),
and a cuda build that skips without NVRTC (nvrtc_or_skip)."""
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("KILN_BUILD_DIR", os.path.join(ROOT, "build"))
KILN = os.path.join(BUILD, "kiln")
MODELS = os.path.join(BUILD, "models")

# The verifiers between passes (graph_verify after every graph pass,
# ir_verify after every lowering pass) run in every compile these tests
# make, in this process and in the kiln commands it starts; a broken
# invariant fails the test that hit it.  KILN_VERIFY=0 turns them off.
os.environ.setdefault("KILN_VERIFY", "1")


def nvrtc_or_skip(fn):
    """fn() (a build for a cuda target), the test skipped where NVRTC is
    not installed."""
    import kiln  # pylint: disable=import-outside-toplevel (the CLI tests do not import kiln)

    try:
        return fn()
    except kiln.KilnError as e:
        if "NVRTC" in str(e) and "not found" in str(e):
            pytest.skip("NVRTC is not installed: %s" % str(e).splitlines()[0])
        raise


def run(args, **kw):
    """Run a command; return the CompletedProcess (text)."""
    return subprocess.run(args, capture_output=True, text=True, **kw)


def cpu_has(flag):
    """whether /proc/cpuinfo lists the CPU flag (avx512f, avx512_vnni, ...)"""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            return flag in f.read().split()
    except OSError:
        return False


def cpu_has_bf16():
    """whether this CPU has AVX512-BF16"""
    return cpu_has("avx512_bf16")


def kiln(*args, check=True, **kw):
    p = run([KILN, *args], **kw)
    if check and p.returncode != 0:
        raise AssertionError(f"kiln {' '.join(args)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


@pytest.fixture(scope="session")
def exported():
    """Export a model once per session; returns its path prefix."""
    def get(name):
        p = run([sys.executable, os.path.join(ROOT, "tools", "export_models.py"), "--out", MODELS, name])
        assert p.returncode == 0, p.stderr
        return os.path.join(MODELS, name)
    return get


def ort_python(module="onnxruntime"):
    """A Python that imports module (onnxruntime, or a part of it such as
    onnxruntime.quantization): $KILN_ORT_PYTHON, else build/ort-venv
    (tests/models/ort_venv.sh makes it), else the python3 on PATH; None
    when none does."""
    cands = [os.environ.get("KILN_ORT_PYTHON"), os.path.join(BUILD, "ort-venv", "bin", "python"), shutil.which("python3")]
    for c in cands:
        if c and os.path.exists(c) and run([c, "-c", f"import {module}"]).returncode == 0:
            return c
    return None


def ort_fixture(module="onnxruntime"):
    """A module-scoped fixture `ortpy` (assign it to that name in the test
    file): the path of ort_python(module); the tests that use it skip when
    there is none."""
    @pytest.fixture(scope="module")
    def ortpy():
        p = ort_python(module)
        if not p:
            pytest.skip("no Python with onnxruntime (set KILN_ORT_PYTHON, or run tests/models/ort_venv.sh)")
        return p
    return ortpy


ORT_RUN = """
import sys, numpy as np, onnxruntime as ort
s = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
with np.load(sys.argv[2]) as z:
    feeds = {k: z[k] for k in z.files}
np.savez(sys.argv[3], *s.run(None, feeds))
"""


def ort_run(ortpy, tmp_path, model, feeds):
    """The outputs of model (a path) run by ONNX Runtime in the Python
    ortpy on feeds ({input name: array}), in order."""
    import numpy as np
    np.savez(str(tmp_path / "feeds.npz"), **feeds)
    p = run([ortpy, "-c", ORT_RUN, model, str(tmp_path / "feeds.npz"), str(tmp_path / "ort.npz")])
    assert p.returncode == 0, p.stderr
    with np.load(str(tmp_path / "ort.npz")) as z:
        return [z[f"arr_{i}"] for i in range(len(z.files))]
