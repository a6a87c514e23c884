"""kiln.relay.build(..., executor="aot") and export_library(fmt="c"): the
digits model as a Model Library Format tar of standalone C, built with the
C compiler alone and matched against PyTorch's logits."""
import json
import os
import subprocess
import tarfile

import numpy as np
import pytest

import kiln
from kiln import relay

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DIGITS = os.path.join(ROOT, "models", "digits")


def digits_module(n):
    return kiln.frontend.from_onnx(os.path.join(DIGITS, "digits.onnx"), {"image": (n, 1, 8, 8)})


def test_aot_model_library_format(tmp_path):
    held = np.load(os.path.join(DIGITS, "heldout.npz"))
    images, logits = held["image"][:8], held["logits"][:8]
    mod, params = digits_module(len(images))
    with kiln.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params, executor="aot")
    assert isinstance(lib, kiln.aot.AotExecutorFactoryModule)
    tar = lib.export_library(str(tmp_path / "model.tar"), fmt="c", prefix="digits")
    with tarfile.open(tar) as t:
        names = t.getnames()
        t.extractall(tmp_path / "mlf")
    for want in ["metadata.json", "codegen/host/include/digits.h", "codegen/host/src/digits.c",
                 "codegen/host/src/main.c", "codegen/host/src/Makefile", "src/relay.txt"]:
        assert want in names, names
    meta = json.load(open(tmp_path / "mlf" / "metadata.json"))
    assert meta["executors"] == ["aot"] and meta["prefix"] == "digits"
    src = tmp_path / "mlf" / "codegen" / "host" / "src"
    p = subprocess.run(["make", "-s", "CC=gcc", "CFLAGS=-O2 -std=c99 -Wall -Wextra -Werror"], cwd=src,
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    np.save(src / "in.npy", images)
    p = subprocess.run(["./example", "in.npy", "out.npy"], cwd=src, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    got = np.load(src / "out.npy")
    assert np.linalg.norm(got - logits) / np.linalg.norm(logits) <= 1e-4


def test_aot_export_options_and_errors(tmp_path):
    mod, params = digits_module(1)
    lib = kiln.build(mod, params=params, executor="aot")
    d = lib.export_library(str(tmp_path / "dir"), fmt="c", prefix="m", isa="generic", weights="separate")
    assert sorted(os.listdir(d)) == sorted(["m.h", "m.c", "m.bin", "main.c", "Makefile", "CMakeLists.txt",
                                            "metadata.json"])
    with pytest.raises(kiln.KilnError, match="exports C only"):
        lib.export_library(str(tmp_path / "x.so"), fmt="so")
    with pytest.raises(kiln.KilnError, match="isa 'sse9'"):
        lib.export_library(str(tmp_path / "y"), isa="sse9")
    with pytest.raises(kiln.KilnError, match="executor must be 'graph' or 'aot'"):
        kiln.build(mod, params=params, executor="vm")
