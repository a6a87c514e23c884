#!/usr/bin/env python3
"""What loading a compiled model costs, and what its checksums cost.

    /usr/bin/python3 bench/load.py MODEL.so [--rounds 20]

Each round runs in a fresh child process (so nothing of the module is
mapped yet; the file is in the page cache after the first round) and
times, through libkiln_runtime:
  check    kiln_artifact_open + _free: map the file, read its section
           table, hash every byte but the weights (the check
           kiln_module_load makes before dlopen)
  load     kiln_module_load (that check, then dlopen and the tables)
  create   kiln_graph_executor_create (graph, memory plan, params bound
           in place)
  weights  kiln_module_check_params (the weights' chunk hashes, on the
           thread pool; done once, before the first run)
  run1     the first kiln_graph_executor_run (pages the weights in)
Medians over the rounds, in ms, and the check as a share of load + create.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

CHILD = r"""
import ctypes, json, os, sys, time
lib = ctypes.CDLL(os.path.join(sys.argv[2], "libkiln_runtime.so"))
lib.kiln_last_error.restype = ctypes.c_char_p
def ok(rc):
    if rc:
        raise SystemExit(lib.kiln_last_error().decode())
path = sys.argv[1].encode()
t = {}
a = ctypes.c_void_p()
t0 = time.perf_counter(); ok(lib.kiln_artifact_open(path, ctypes.byref(a))); lib.kiln_artifact_free(a)
t["check"] = time.perf_counter() - t0
m, ex = ctypes.c_void_p(), ctypes.c_void_p()
t0 = time.perf_counter(); ok(lib.kiln_module_load(path, ctypes.byref(m))); t["load"] = time.perf_counter() - t0
t0 = time.perf_counter(); ok(lib.kiln_graph_executor_create(m, ctypes.byref(ex))); t["create"] = time.perf_counter() - t0
t0 = time.perf_counter(); ok(lib.kiln_module_check_params(m)); t["weights"] = time.perf_counter() - t0
t0 = time.perf_counter(); ok(lib.kiln_graph_executor_run(ex)); t["run1"] = time.perf_counter() - t0
print(json.dumps({k: v * 1e3 for k, v in t.items()}))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("--rounds", type=int, default=20)
    a = ap.parse_args()
    lib_dir = os.environ.get("KILN_LIBRARY_PATH", os.path.join(ROOT, "build"))
    rows = []
    for _ in range(a.rounds + 1):
        p = subprocess.run([sys.executable, "-c", CHILD, a.model, lib_dir], capture_output=True, text=True)
        if p.returncode:
            raise SystemExit(p.stderr)
        rows.append(json.loads(p.stdout))
    rows = rows[1:]  # the first round reads the file into the page cache
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    print(f"{os.path.basename(a.model)} ({os.path.getsize(a.model) / 1e6:.1f} MB), median of {a.rounds} fresh processes:")
    for k, v in med.items():
        print(f"  {k:8s} {v:8.3f} ms")
    print(f"  the load-time check is {100 * med['check'] / (med['load'] + med['create']):.1f}% of load + create "
          f"(it is inside load); the weights' check {100 * med['weights'] / med['run1']:.0f}% of the first run")


if __name__ == "__main__":
    main()
