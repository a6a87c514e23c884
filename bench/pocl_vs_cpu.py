#!/usr/bin/env python3
"""The generic GPU schedule on POCL beside Kiln's CPU build: a sanity figure
for the opencl target, not a performance claim (POCL runs OpenCL on the CPU,
and the generic GPU schedule is untuned: one output element per thread).

    /usr/bin/python3 bench/pocl_vs_cpu.py [--models resnet18,mobilenet_v2]
        [--rounds 3]

For each model (tools/export_models.py's torchvision architectures, batch
1): `kiln compile` for cpu and for opencl, then `kiln run --print-time`
(--repeat 3) on each, the two alternating round by round; a latency is the
median over the rounds of each round's mean.  Prints one line per model.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUILD = os.environ.get("KILN_BUILD_DIR", os.path.join(ROOT, "build"))
KILN = os.path.join(BUILD, "kiln")


def sh(args):
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode:
        sys.exit("%s failed:\n%s%s" % (" ".join(args), p.stdout, p.stderr))
    return p.stdout


def mean_ms(out):
    lines = out.strip().splitlines()
    i = next(k for k, line in enumerate(lines) if line.strip().startswith("mean (ms)"))
    return float(re.split(r"\s+", lines[i + 1].strip())[0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="resnet18,mobilenet_v2")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    models = os.path.join(BUILD, "models")
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.models.split(","):
            sh([sys.executable, os.path.join(ROOT, "tools", "export_models.py"), "--out", models, name])
            onnx = os.path.join(models, name + ".onnx")
            inp = os.path.join(models, name + ".input.npy")
            so = {}
            for target in ("cpu", "opencl"):
                so[target] = os.path.join(tmp, "%s_%s.so" % (name, target))
                sh([KILN, "compile", onnx, "-o", so[target], "--input-shapes", "data:[1,3,224,224]", "--target",
                    target, "--quiet-fallback"])
                sh([KILN, "run", so[target], "--inputs", inp])  # warm-up (POCL builds the kernels)
            times = {"cpu": [], "opencl": []}
            for _ in range(a.rounds):
                for target in ("cpu", "opencl"):
                    out = sh([KILN, "run", so[target], "--inputs", inp, "--print-time", "--repeat", "3"])
                    times[target].append(mean_ms(out))
            cpu, cl = statistics.median(times["cpu"]), statistics.median(times["opencl"])
            print("%-14s cpu %9.1f ms   opencl (POCL) %9.1f ms   ratio %5.1fx" % (name, cpu, cl, cl / cpu))


if __name__ == "__main__":
    main()
