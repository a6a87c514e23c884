#!/usr/bin/env python3
"""Standalone C export against the shared-library build: batch-1 float32
latency, workspace bytes, and a plain-loop reference, in one run.

    /usr/bin/python3 bench/export_c.py [--models resnet50,mobilenet_v2]
        [--rounds 10] [--per-round 3] [--out FILE]

For each model (tools/export_models.py's torchvision architectures):
  so       kiln compile -> MODEL.so, timed by bench/export_c_so.c through
           the runtime's graph executor (one thread: KILN_NUM_THREADS=1)
  c        kiln compile --emit c (--threads none, --isa native,
           --weights separate), built by its Makefile (-O3 -march=native)
           and timed by bench/export_c_main.c
  naive    the plain-loop reference: kiln compile -O 0 --emit c --isa
           generic (no fusion, the generic schedules, scalar loops - the
           shape of onnx2c-style C), same build and timer; a few rounds
The engines alternate round by round (per-round runs each, after an
untimed one); a latency is the median over the rounds of each round's
median, of the wall clock and of the thread's CPU time (the CPU time is
what a loaded machine disturbs least).  Memory:
NAME_WORKSPACE_BYTES against the graph executor's plan of the same
tensors (metadata.json) and one buffer per tensor.  Both builds use the
same tuning records (those Kiln ships).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUILD = os.environ.get("KILN_BUILD_DIR", os.path.join(ROOT, "build"))
KILN = os.path.join(BUILD, "kiln")


def sh(args, **kw):
    p = subprocess.run(args, capture_output=True, text=True, **kw)
    if p.returncode:
        sys.exit("failed: %s\n%s%s" % (" ".join(args), p.stdout, p.stderr[-3000:]))
    return p.stdout


def export_c(onnx, d, name, *extra):
    sh([KILN, "compile", onnx, "--input-shapes", "data:[1,3,224,224]", "--emit", "c", "-o", d, "--prefix", name,
        "--weights", "separate", "--quiet-fallback", *extra])
    sh(["make", "-s", "-j2", "lib%s.a" % name], cwd=d)
    up = name.upper()
    sh(["cc", "-O2", "-std=c99", "-o", "bench_c", os.path.join(HERE, "export_c_main.c"), "-I.",
        '-DBENCH_HEADER="%s.h"' % name, "-DBENCH_RUN=%s_run" % name, "-DBENCH_M(x)=%s_##x" % up,
        "-DBENCH_SEPARATE", "lib%s.a" % name, "-lm"], cwd=d)
    return json.load(open(os.path.join(d, "metadata.json")))


def medians(out):
    """(wall, cpu) medians of a harness's "wall cpu" lines."""
    rows = [tuple(float(v) for v in line.split()) for line in out.splitlines() if line.strip()]
    return statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows)


def time_c(d, name, runs):
    return medians(sh(["./bench_c", str(runs), "%s.bin" % name], cwd=d))


def build_so_harness(tmp):
    exe = os.path.join(tmp, "bench_so")
    sh(["cc", "-O2", "-std=c11", "-o", exe, os.path.join(HERE, "export_c_so.c"), "-I" + os.path.join(ROOT, "include"),
        "-L" + BUILD, "-lkiln_runtime", "-Wl,-rpath," + BUILD])
    return exe


def time_so(exe, so, runs):
    return medians(sh([exe, so, str(runs)], env=dict(os.environ, KILN_NUM_THREADS="1")))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="resnet50,mobilenet_v2")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--per-round", type=int, default=3)
    ap.add_argument("--naive-rounds", type=int, default=2)
    ap.add_argument("--models-dir", default=os.path.join(BUILD, "models"))
    ap.add_argument("--out")
    a = ap.parse_args()
    names = a.models.split(",")
    sh([sys.executable, os.path.join(ROOT, "tools", "export_models.py"), "--out", a.models_dir, *names])
    rows = []
    tmp = tempfile.mkdtemp(prefix="kiln-bench-c-")
    harness = build_so_harness(tmp)
    for name in names:
        onnx = os.path.join(a.models_dir, name + ".onnx")
        so = os.path.join(tmp, name + ".so")
        sh([KILN, "compile", onnx, "--input-shapes", "data:[1,3,224,224]", "-o", so, "--quiet-fallback"])
        dc, dn = os.path.join(tmp, name + "_c"), os.path.join(tmp, name + "_naive")
        meta = export_c(onnx, dc, name)
        naive = export_c(onnx, dn, name, "-O", "0", "--isa", "generic")
        t = {"so": [], "c": [], "naive": []}
        for r in range(a.rounds):
            order = [("so", lambda: time_so(harness, so, a.per_round)), ("c", lambda: time_c(dc, name, a.per_round))]
            for k, f in (order if r % 2 == 0 else order[::-1]):
                t[k].append(f())
            if r < a.naive_rounds:
                t["naive"].append(time_c(dn, name, 1))
        med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in t.items()}
        rows.append((name, med, meta, naive))
        print("%s: wall so %.2f c %.2f (%.3f); cpu so %.2f c %.2f (%.3f); naive %.1f ms; workspace %d bytes, "
              "graph executor plan %d, one buffer per tensor %d; naive workspace %d" %
              (name, med["so"][0], med["c"][0], med["c"][0] / med["so"][0], med["so"][1], med["c"][1],
               med["c"][1] / med["so"][1], med["naive"][1], meta["workspace_bytes"], meta["graph_executor_plan_bytes"],
               meta["one_buffer_per_tensor_bytes"], naive["workspace_bytes"]), flush=True)
    lines = ["| model | .so CPU ms (wall) | C export CPU ms (wall) | C / .so CPU (wall) | plain loops CPU ms | "
             "workspace MB | graph executor plan MB | one buffer per tensor MB |", "|---|---|---|---|---|---|---|---|"]
    for name, med, meta, naive in rows:
        lines.append("| %s | %.2f (%.2f) | %.2f (%.2f) | %.3f (%.3f) | %.0f | %.2f | %.2f | %.2f |" %
                     (name, med["so"][1], med["so"][0], med["c"][1], med["c"][0], med["c"][1] / med["so"][1],
                      med["c"][0] / med["so"][0], med["naive"][1], meta["workspace_bytes"] / 1e6,
                      meta["graph_executor_plan_bytes"] / 1e6, meta["one_buffer_per_tensor_bytes"] / 1e6))
    text = "\n".join(lines)
    print(text)
    if a.out:
        open(a.out, "w").write(text + "\n")


if __name__ == "__main__":
    main()
