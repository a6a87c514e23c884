#!/usr/bin/env python3
"""VGG-16, ResNet-50 and MobileNet-V2 on CUDA with the seeds' TopHub configs
and with the CUDA templates' fallback configs, beside PyTorch's eager
(cuDNN) latency on the same GPU: the figure issue 17 asks for when a
machine with an NVIDIA GPU is at hand.

    /usr/bin/python3 bench/cuda_tophub.py [--models vgg16,resnet50,mobilenet_v2]
        [--batches 1,8] [--rounds 5] [--arch sm_90]

For each model and batch: `kiln compile --target "cuda -arch=..."` once
with tests/data/tophub/<model>_bs_<batch>.log and once without records
(fallback configs), then, round by round, `kiln run --device cuda
--print-time --repeat 10` of both and PyTorch's forward pass (torchvision's
architecture with the exported model's weights is not needed for timing:
the same architecture, random weights, eval mode, no grad, synchronized),
interleaved; a latency is the median over the rounds.  Without a CUDA
device it only compiles (the kernels through NVRTC) and says that nothing
was timed.  Without PyTorch's CUDA build the PyTorch column is left out.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUILD = os.environ.get("KILN_BUILD_DIR", os.path.join(ROOT, "build"))
KILN = os.path.join(BUILD, "kiln")
LOGS = {"vgg16": "vgg16", "resnet50": "resnet50v1", "mobilenet_v2": "mobilenet_v2"}


def sh(args):
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode:
        sys.exit("%s failed:\n%s%s" % (" ".join(args), p.stdout, p.stderr))
    return p.stdout + p.stderr


def mean_ms(out):
    lines = out.strip().splitlines()
    i = next(k for k, line in enumerate(lines) if line.strip().startswith("mean (ms)"))
    return float(re.split(r"\s+", lines[i + 1].strip())[0])


def cuda_device():
    """(whether device 0 is there, the driver's reason when it is not)."""
    code = ("import kiln\n"
            "try:\n"
            "    kiln.nd.empty((1,), 'float32', kiln.cuda(0)); print('OK')\n"
            "except Exception as e:\n"
            "    print(str(e).splitlines()[0])\n")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), KILN_LIBRARY_PATH=BUILD)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    out = p.stdout.strip() or p.stderr.strip()
    return out == "OK", out


def torch_timer(name, batch):
    """A function timing one forward pass in ms, or None without CUDA torch."""
    try:
        import torch  # pylint: disable=import-outside-toplevel
        import torchvision  # pylint: disable=import-outside-toplevel
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    model = getattr(torchvision.models, name)().eval().cuda()
    x = torch.randn(batch, 3, 224, 224, device="cuda")

    def run(repeat=10):
        with torch.no_grad():
            model(x)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(repeat):
                model(x)
            torch.cuda.synchronize()
        return (time.perf_counter() - t0) * 1e3 / repeat
    return run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="vgg16,resnet50,mobilenet_v2")
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--arch", default="sm_90")
    a = ap.parse_args()
    models = os.path.join(BUILD, "models")
    device, why = cuda_device()
    if not device:
        print("no CUDA device here (%s): compiling only (NVRTC), nothing is timed" % why)
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.models.split(","):
            sh([sys.executable, os.path.join(ROOT, "tools", "export_models.py"), "--out", models, name])
            onnx = os.path.join(models, name + ".onnx")
            for batch in [int(b) for b in a.batches.split(",")]:
                log = os.path.join(ROOT, "tests", "data", "tophub", "%s_bs_%d.log" % (LOGS[name], batch))
                so = {}
                for kind in ("tophub", "fallback"):
                    so[kind] = os.path.join(tmp, "%s_%d_%s.so" % (name, batch, kind))
                    recs = ["--tuning-records", log] if kind == "tophub" else []
                    out = sh([KILN, "compile", onnx, "-o", so[kind], "--input-shapes", "data:[%d,3,224,224]" % batch,
                              "--target", "cuda -arch=%s" % a.arch, "--no-shipped-records", "--quiet-fallback",
                              *recs])
                    print("%-13s batch %-3d %-8s compiled: %s" % (name, batch, kind, out.strip().splitlines()[-1]))
                if not device:
                    continue
                torch_run = torch_timer(name, batch)
                times = {"tophub": [], "fallback": [], "pytorch": []}
                for kind in ("tophub", "fallback"):
                    sh([KILN, "run", so[kind], "--device", "cuda"])  # warm-up: module load
                for _ in range(a.rounds):
                    for kind in ("tophub", "fallback"):
                        out = sh([KILN, "run", so[kind], "--device", "cuda", "--print-time", "--repeat", "10"])
                        times[kind].append(mean_ms(out))
                    if torch_run:
                        times["pytorch"].append(torch_run())
                med = {k: statistics.median(v) for k, v in times.items() if v}
                line = "%-13s batch %-3d kiln tophub %8.3f ms   kiln fallback %8.3f ms" % (
                    name, batch, med["tophub"], med["fallback"])
                if "pytorch" in med:
                    line += "   pytorch eager %8.3f ms   tophub/pytorch %5.2fx" % (
                        med["pytorch"], med["tophub"] / med["pytorch"])
                print(line)
    if not device:
        print("nothing timed: no CUDA driver or device (%s); every build above compiled" % why)


if __name__ == "__main__":
    main()
