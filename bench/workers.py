"""Benchmark workers: one process per engine, driven over stdin/stdout by
bench/models.py so that engines can be measured interleaved (A B A B ...).

Protocol: the worker starts, loads the model, runs it a few times to warm
up and prints "ready <output checksum>".  Each line "run N" makes it run N
times and print a JSON list of the N latencies in ms; "quit" ends it.

    python worker.py kiln MODEL.so INPUT.npy THREADS
    python worker.py onnxruntime MODEL.onnx INPUT.npy THREADS
    python worker.py openvino MODEL.onnx INPUT.npy THREADS   (openvino-bf16: INFERENCE_PRECISION_HINT bf16)
    python worker.py pytorch MODEL_NAME INPUT.npy THREADS
    python worker.py --once ENGINE TARGET INPUT.npy THREADS

With --once the worker loads the model, runs it once and exits: what
bench/models.py measures the peak resident memory of (Kiln's own figure is
`kiln run`'s, the command line tool, without Python).

The kiln worker drives libkiln_runtime through ctypes (no compiler needed),
the PyTorch worker rebuilds the torchvision model with the export script's
seeded weights, traces it and applies torch.jit.optimize_for_inference.
"""
import ctypes
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


def kiln_runner(so, x, threads):
    lib_dir = os.environ.get("KILN_LIBRARY_PATH", os.path.join(ROOT, "build"))
    rt = ctypes.CDLL(os.path.join(lib_dir, "libkiln_runtime.so"))
    rt.kiln_last_error.restype = ctypes.c_char_p

    def check(rc):
        if rc != 0:
            raise RuntimeError(rt.kiln_last_error().decode())

    check(rt.kiln_set_num_threads(threads))
    mod, ex = ctypes.c_void_p(), ctypes.c_void_p()
    check(rt.kiln_module_load(so.encode(), ctypes.byref(mod)))
    check(rt.kiln_graph_executor_create(mod, ctypes.byref(ex)))
    x = np.ascontiguousarray(x, dtype=np.float32)
    shape = (ctypes.c_int64 * x.ndim)(*x.shape)
    t = DLTensor(x.ctypes.data, DLDevice(1, 0), x.ndim, DLDataType(2, 32, 1), shape, None, 0)
    check(rt.kiln_graph_executor_set_input(ex, 0, ctypes.byref(t)))
    out = ctypes.c_void_p()

    def run():
        check(rt.kiln_graph_executor_run(ex))

    def result():
        check(rt.kiln_graph_executor_get_output(ex, 0, ctypes.byref(out)))
        dl = ctypes.cast(out, ctypes.POINTER(DLTensor)).contents
        n = 1
        for i in range(dl.ndim):
            n *= dl.shape[i]
        arr = np.ctypeslib.as_array(ctypes.cast(dl.data, ctypes.POINTER(ctypes.c_float)), (n,)).copy()
        rt.kiln_array_free(out)
        return arr

    return run, result


def ort_runner(path, x, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    feed = {name: x.astype(np.float32)}
    holder = {}

    def run():
        holder["y"] = sess.run(None, feed)[0]

    return run, lambda: holder["y"].ravel()


def openvino_runner(path, x, threads, precision="f32"):
    import openvino as ov
    core = ov.Core()
    cm = core.compile_model(path, "CPU", {"INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY",
                                          "INFERENCE_PRECISION_HINT": precision})
    req = cm.create_infer_request()
    feed = {0: x.astype(np.float32)}
    holder = {}

    def run():
        holder["y"] = req.infer(feed)[cm.output(0)]

    return run, lambda: np.asarray(holder["y"]).ravel()


def torch_runner(name, x, threads):
    import torch
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    from export_models import build
    torch.set_num_threads(threads)
    model = build(name)
    xt = torch.from_numpy(x.astype(np.float32))
    with torch.no_grad():
        traced = torch.jit.optimize_for_inference(torch.jit.trace(model, xt))
    holder = {}

    def run():
        with torch.no_grad():
            holder["y"] = traced(xt)

    return run, lambda: holder["y"].numpy().ravel()


def main():
    once = sys.argv[1] == "--once"
    args = sys.argv[2:] if once else sys.argv[1:]
    engine, target, inp, threads = args[0], args[1], args[2], int(args[3])
    x = np.load(inp)
    make = {"kiln": kiln_runner, "onnxruntime": ort_runner, "openvino": openvino_runner,
            "openvino-bf16": lambda p, x, t: openvino_runner(p, x, t, "bf16"),  # bench/bf16.py
            "pytorch": torch_runner}[engine]
    run, result = make(target, x, threads)
    if once:
        run()
        return
    for _ in range(5):
        run()
    y = result()
    print("ready %.6e %.6e" % (float(np.abs(y).sum()), float(y.sum())), flush=True)
    for line in sys.stdin:
        cmd = line.split()
        if not cmd or cmd[0] == "quit":
            break
        n = int(cmd[1])
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            run()
            times.append((time.perf_counter() - t0) * 1e3)
        print(json.dumps(times), flush=True)


if __name__ == "__main__":
    main()
