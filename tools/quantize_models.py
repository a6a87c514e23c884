#!/usr/bin/env python3
"""Quantize float32 ONNX models to int8 with ONNX Runtime's own tool, and
record ONNX Runtime's outputs of both for a fixed input.

Run with the Python that has onnxruntime (the `python3` on PATH here; CI
makes a venv, tests/models/ort_venv.sh):
    python3 tools/quantize_models.py MODEL.onnx [MODEL.onnx ...] [--calib N]

For MODEL.onnx (with MODEL.input.npy beside it: tools/export_models.py
makes both) this writes
  MODEL.int8.onnx            onnxruntime.quantization.quantize_static, QDQ
                             format, per-channel weights, uint8 activations
                             and int8 weights (U8S8, what AVX512-VNNI
                             multiplies), MinMax calibration on N seeded
                             inputs (standard normal, seed 1000 + i, the
                             input's shape; default 8)
  MODEL.int8.ort.npy         ONNX Runtime's output of MODEL.int8.onnx for
                             MODEL.input.npy (1 thread)
  MODEL.fp32.ort.npy         ONNX Runtime's output of MODEL.onnx for it
Files newer than their model and this script are kept.
"""
import argparse
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType,
                                      quantize_static)


class SeededReader(CalibrationDataReader):
    def __init__(self, name, shape, n):
        self.items = iter([{name: np.random.default_rng(1000 + i).standard_normal(shape).astype(np.float32)}
                           for i in range(n)])

    def get_next(self):
        return next(self.items, None)


def run(path, x):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return s.run(None, {s.get_inputs()[0].name: x})[0]


def fresh(out, *deps):
    return os.path.exists(out) and all(os.path.getmtime(out) >= os.path.getmtime(d) for d in deps)


def quantize(model, calib):
    base = model[:-len(".onnx")]
    q, x = base + ".int8.onnx", np.load(base + ".input.npy")
    if not fresh(q, model, __file__):
        m = onnx.load(model)
        inp = m.graph.input[0].name
        quantize_static(model, q, SeededReader(inp, x.shape, calib), quant_format=QuantFormat.QDQ,
                        per_channel=True, activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                        calibrate_method=CalibrationMethod.MinMax)
    for path, out in ((q, base + ".int8.ort.npy"), (model, base + ".fp32.ort.npy")):
        if not fresh(out, path, __file__):
            np.save(out, run(path, x))
    print(q)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--calib", type=int, default=8)
    a = ap.parse_args()
    for m in a.models:
        if not m.endswith(".onnx"):
            sys.exit(f"{m}: expected MODEL.onnx")
        quantize(m, a.calib)


if __name__ == "__main__":
    main()
