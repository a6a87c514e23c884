#!/usr/bin/env python3
"""Batch-1 float32 latency of Kiln against ONNX Runtime and PyTorch, measured
side by side on this machine in the same run.

    /usr/bin/python3 bench/models.py [--models resnet18,resnet50,...|suite]
        [--threads 1,2] [--rounds 10] [--per-round 3] [--engines ...] [--out FILE]
        [--batch N] [--reexport]

Models come from tools/export_models.py (torchvision architectures with
seeded random weights; "suite" is its SUITE: vision and Swin transformers,
ConvNeXt, EfficientNet, RegNet, ResNeXt, ShuffleNet, MobileNetV3, DenseNet,
GoogLeNet, Inception-v3, MnasNet, Wide ResNet and transformer encoders at
three sequence lengths), kept in build/models between runs: a model is
exported again only when its stamp (the exporter, the torch and torchvision
versions, the model's options) changes, or with --reexport.  Engines, each in its own worker process
(bench/workers.py):
  kiln-fallback  kiln compile with the templates' fallback configs only
  kiln           kiln compile with the tuning records Kiln ships
  pytorch        Debian's torch: torch.jit.trace + optimize_for_inference,
                 torch.set_num_threads(T)
  onnxruntime    the onnxruntime package from PyPI (the `python3` on PATH),
                 CPU, intra_op_num_threads = T, graph optimization level all
  openvino       the openvino package from PyPI (the `python3` on PATH), CPU,
                 INFERENCE_NUM_THREADS = T, latency hint, f32 precision
  kiln-sym       (with --batch N) one kiln compile with an open batch,
                 "data:[batch,3,H,W],batch<=N" (batched variants at 4 and 8
                 within the bound, docs/symbolic_shapes.md), run at batch N
With --batch N the models run at batch N: the ONNX file gets an open batch
(NAME.batch.onnx: dimension 0 of the input and output named "batch"), the
input is N seeded samples (NAME.input_bN.npy), and kiln/kiln-fallback are
static batch-N builds.
The engines are measured interleaved: in each round every engine runs
--per-round times, in a rotating order, so the machine's drifting speed
hits them alike; before its turn an engine waits 0.2 s (the previous
engine's worker threads stop spinning) and makes one untimed run.  A
latency is the median over all rounds (>= 30 runs by default); an engine that
cannot load a model (a worker that fails to start) is left out of that row.  The table gives each engine's ms, Kiln's ratio to the best
peer (< 1 is faster), and Kiln's GFLOP/s beside the one-core FMA peak the
same run measures (bench_peak).  A second table gives each engine's peak
resident memory (/usr/bin/time's maximum resident set size: `kiln run` for
Kiln, a worker running the model once for the peers) and the size of Kiln's .so beside the
ONNX file.  Results also go to --out (Markdown).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

from interleave import interleaved

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUILD = os.environ.get("KILN_BUILD_DIR", os.path.join(ROOT, "build"))
DEBIAN_PY = "/usr/bin/python3"
ORT_PY = os.environ.get("KILN_ORT_PYTHON", shutil.which("python3") or "python3")
ALL = ["resnet18", "resnet50", "mobilenet_v2", "vgg16", "squeezenet1_1"]


def model_gflop(path):
    """Multiply-adds x 2 of Conv, Gemm and MatMul nodes, from shape inference."""
    import onnx
    from onnx import shape_inference
    m = shape_inference.infer_shapes(onnx.load(path))
    g = m.graph
    shapes = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        shapes[vi.name] = [d.dim_value for d in vi.type.tensor_type.shape.dim]
    for t in g.initializer:
        shapes[t.name] = list(t.dims)
    flops = 0
    for n in g.node:
        if n.op_type == "Conv":
            out = shapes.get(n.output[0])
            w = shapes.get(n.input[1])
            if out and w:
                k = 1
                for d in w[1:]:
                    k *= d
                o = 1
                for d in out:
                    o *= d
                flops += 2 * o * k
        elif n.op_type in ("Gemm", "MatMul"):
            a, b = shapes.get(n.input[0]), shapes.get(n.input[1])
            out = shapes.get(n.output[0])
            if a and out:
                o = 1
                for d in out:
                    o *= d
                flops += 2 * o * a[-1]
    return flops / 1e9


def peak_rss_mb(cmd):
    """Peak resident memory (MB) of cmd run to completion, as /usr/bin/time
    reports it (the child's ru_maxrss): mapped file pages the process
    touched count, as do its heap and its interpreter.  Through
    /usr/bin/time, not our own wait4: Linux carries a process's high-water
    mark across exec, so a child forked from this (large) Python process
    would report at least this process's size."""
    p = subprocess.run(["/usr/bin/time", "-f", "maxrss_kb %M", *cmd], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    last = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
    if p.returncode or not last.startswith("maxrss_kb "):
        raise RuntimeError(f"{' '.join(cmd)} failed: {p.stderr[-500:]}")
    return int(last.split()[1]) / 1024.0


def rss_round(cmds, rounds):
    """Each engine's median peak RSS over `rounds` runs, the engines taking
    turns (A B A B ...) so a busy moment hits them alike.  With rounds 0
    nothing is measured and the result is empty."""
    if rounds <= 0:
        return {}
    got = {e: [] for e in cmds}
    for _ in range(rounds):
        for e, cmd in cmds.items():
            got[e].append(peak_rss_mb(cmd))
    return {e: statistics.median(v) for e, v in got.items()}


def compile_kiln(onnx_path, so, extra):
    t0 = time.time()
    cmd = [os.path.join(BUILD, "kiln"), "compile", onnx_path, "-o", so, *extra]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(p.stderr)
    return time.time() - t0


def peak():
    exe = os.path.join(BUILD, "bench_peak")
    if not os.path.exists(exe):
        subprocess.run(["cmake", "--build", BUILD, "--target", "bench_peak"], capture_output=True)
    p = subprocess.run([exe], capture_output=True, text=True)
    return float(p.stdout.split()[0]) if p.returncode == 0 else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=",".join(ALL))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--per-round", type=int, default=3)
    ap.add_argument("--rss-rounds", type=int, default=3, help="peak-RSS runs per engine (median; 0 measures no RSS)")
    ap.add_argument("--engines", default="kiln-fallback,kiln,pytorch,onnxruntime,openvino")
    ap.add_argument("--out", default=os.path.join(BUILD, "bench_results.md"))
    ap.add_argument("--batch", type=int, default=1, help="batch size (default 1)")
    ap.add_argument("--reexport", action="store_true", help="export the models again even where their stamp matches")
    a = ap.parse_args()
    models = []
    for m in a.models.split(","):
        if m == "suite":
            sys.path.insert(0, os.path.join(ROOT, "tools"))
            from export_models import SUITE  # pylint: disable=import-outside-toplevel
            models += SUITE
        else:
            models.append(m)
    engines = a.engines.split(",")
    mdir = os.path.join(BUILD, "models")
    subprocess.run([DEBIAN_PY, os.path.join(ROOT, "tools", "export_models.py"), "--out", mdir,
                    *(["--reexport"] if a.reexport else []), *models], check=True)
    fma = peak()
    rows = []
    for name in models:
        prefix = os.path.join(mdir, name)
        onnx_path, inp = prefix + ".onnx", prefix + ".input.npy"
        so_fb, so_tuned, so_sym = prefix + ".fallback.so", prefix + ".kiln.so", prefix + ".sym.so"
        shapes = []
        if a.batch > 1:
            onnx_path, inp, dims = batched(prefix, a.batch)
            so_fb, so_tuned = prefix + f".fallback_b{a.batch}.so", prefix + f".kiln_b{a.batch}.so"
            shapes = ["--input-shapes", "data:[%s]" % ",".join(map(str, [a.batch, *dims]))]
            if "kiln-sym" in engines:
                compile_kiln(onnx_path, so_sym, ["--input-shapes", "data:[batch,%s],batch<=%d"
                                                 % (",".join(map(str, dims)), a.batch)])
        if "kiln-fallback" in engines:
            compile_kiln(onnx_path, so_fb,
                         shapes + (["--no-shipped-records"] if has_flag("--no-shipped-records") else []))
        ctime = compile_kiln(onnx_path, so_tuned, shapes) if "kiln" in engines else 0
        gflop = model_gflop(prefix + ".onnx") * a.batch
        so_main = so_tuned if "kiln" in engines else so_fb
        sizes = {"onnx_mb": os.path.getsize(onnx_path) / 1e6, "so_mb": os.path.getsize(so_main) / 1e6}
        for t in [int(x) for x in a.threads.split(",")]:
            cmds = {
                "kiln-fallback": [DEBIAN_PY, os.path.join(HERE, "workers.py"), "kiln", so_fb, inp, str(t)],
                "kiln": [DEBIAN_PY, os.path.join(HERE, "workers.py"), "kiln", so_tuned, inp, str(t)],
                "kiln-sym": [DEBIAN_PY, os.path.join(HERE, "workers.py"), "kiln", so_sym, inp, str(t)],
                "pytorch": [DEBIAN_PY, os.path.join(HERE, "workers.py"), "pytorch", name, inp, str(t)],
                "onnxruntime": [ORT_PY, os.path.join(HERE, "workers.py"), "onnxruntime", onnx_path, inp, str(t)],
                "openvino": [ORT_PY, os.path.join(HERE, "workers.py"), "openvino", onnx_path, inp, str(t)],
            }
            # a peer that cannot load this model is left out of the row
            times, sums = interleaved(name, {e: cmds[e] for e in engines}, a.rounds, a.per_round)
            live = list(times)
            # peak memory: `kiln run` (the command line tool) beside each
            # peer's worker running the model once, interleaved
            once = {
                "kiln": [os.path.join(BUILD, "kiln"), "run", so_main, "--inputs", inp, "--threads", str(t)],
                "kiln-sym": [os.path.join(BUILD, "kiln"), "run", so_sym, "--inputs", inp, "--threads", str(t)],
                "pytorch": [DEBIAN_PY, os.path.join(HERE, "workers.py"), "--once", "pytorch", name, inp, str(t)],
                "onnxruntime": [ORT_PY, os.path.join(HERE, "workers.py"), "--once", "onnxruntime", onnx_path, inp,
                                str(t)],
                "openvino": [ORT_PY, os.path.join(HERE, "workers.py"), "--once", "openvino", onnx_path, inp, str(t)],
            }
            rss = rss_round({e: once[e] for e in once if e in live or (e == "kiln" and "kiln-fallback" in live)},
                            a.rss_rounds)
            med = {e: statistics.median(times[e]) if e in live else float("nan") for e in engines}
            peers = [med[e] for e in live if not e.startswith("kiln")]
            best = min(peers) if peers else float("nan")
            row = {"model": name, "threads": t, "gflop": gflop, "compile_s": ctime, "best_peer_ms": best,
                   "rss": rss, **sizes}
            for e in engines:
                row[e] = med[e]
            kiln_ms = med.get("kiln", med.get("kiln-fallback"))
            row["ratio"] = kiln_ms / best if peers else float("nan")
            if "kiln-sym" in med:
                row["ratio_sym"] = med["kiln-sym"] / best if peers else float("nan")
            row["kiln_gflops"] = gflop / (kiln_ms / 1e3)
            row["peak"] = fma * t
            row["agree"] = check_agree(sums)
            rows.append(row)
            print_row(row, engines)
    write(a.out, rows, engines, fma, a)


def batched(prefix, n):
    """NAME.batch.onnx (the input's and output's dimension 0 named "batch",
    the inner shapes dropped so the peers infer them at any batch) and
    NAME.input_bN.npy (n seeded samples); returns their paths and the
    input's dimensions after the batch."""
    import numpy as np  # pylint: disable=import-outside-toplevel
    import onnx  # pylint: disable=import-outside-toplevel
    path, inp = prefix + ".batch.onnx", prefix + f".input_b{n}.npy"
    x1 = np.load(prefix + ".input.npy")
    if not os.path.exists(path) or os.path.getmtime(path) < os.path.getmtime(prefix + ".onnx"):
        m = onnx.load(prefix + ".onnx")
        for v in list(m.graph.input) + list(m.graph.output):
            if v.type.tensor_type.shape.dim:
                v.type.tensor_type.shape.dim[0].dim_param = "batch"
        del m.graph.value_info[:]
        onnx.save(m, path)
    np.save(inp, np.random.RandomState(n).randn(n, *x1.shape[1:]).astype(np.float32))
    return path, inp, list(x1.shape[1:])


def has_flag(flag):
    p = subprocess.run([os.path.join(BUILD, "kiln"), "compile", "--help"], capture_output=True, text=True)
    return flag in p.stdout


def check_agree(sums):
    """The output checksums of all engines agree (loosely: same model)."""
    vals = [float(s[0]) for s in sums.values()]
    return max(vals) - min(vals) <= 1e-3 * max(abs(v) for v in vals)


def print_row(r, engines):
    cells = " ".join(f"{e}={r[e]:.2f}ms" for e in engines)
    rss = " ".join(f"{e}={v:.0f}MB" for e, v in r["rss"].items()) or "not measured (--rss-rounds 0)"
    sym = f" kiln-sym ratio={r['ratio_sym']:.2f}" if "ratio_sym" in r else ""
    print(f"{r['model']:14s} T={r['threads']} {cells} ratio={r['ratio']:.2f}{sym} kiln={r['kiln_gflops']:.0f} GFLOP/s "
          f"(peak {r['peak']:.0f}) outputs agree={r['agree']} | peak RSS {rss} | .so {r['so_mb']:.1f} MB, "
          f".onnx {r['onnx_mb']:.1f} MB", flush=True)


def write(path, rows, engines, fma, a):
    lines = [f"# Kiln vs peers: batch-{a.batch} float32 latency (median ms)", "",
             f"Measured {time.strftime('%Y-%m-%d %H:%M')} on this machine; one-core FMA peak {fma:.1f} GFLOP/s "
             f"(measured by bench_peak in the same run); {a.rounds} rounds x {a.per_round} runs per engine, interleaved.", "",
             "| model | threads | " + " | ".join(engines) + " | Kiln / best peer | Kiln GFLOP/s | peak GFLOP/s |",
             "|---|---|" + "---|" * len(engines) + "---|---|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['threads']} | " + " | ".join(f"{r[e]:.2f}" for e in engines) +
                     f" | {r['ratio']:.2f} | {r['kiln_gflops']:.0f} | {r['peak']:.0f} |")
    mem = sorted({e for r in rows for e in r["rss"]})
    if not mem:
        lines += ["", "Peak resident memory: not measured (--rss-rounds 0)."]
    else:
        lines += ["", "Peak resident memory (MB; `kiln run` for Kiln, a Python worker running the model once for "
                  "the peers, so theirs includes the interpreter; median of --rss-rounds interleaved runs) and "
                  "file sizes (MB):", "",
                  "| model | threads | " + " | ".join(mem) + " | Kiln / ONNX Runtime | Kiln .so | ONNX file | .so / .onnx |",
                  "|---|---|" + "---|" * len(mem) + "---|---|---|---|"]
    for r in rows if mem else []:
        ratio = (r["rss"]["kiln"] / r["rss"]["onnxruntime"] if "kiln" in r["rss"] and "onnxruntime" in r["rss"]
                 else float("nan"))
        lines.append(f"| {r['model']} | {r['threads']} | " + " | ".join(f"{r['rss'].get(e, float('nan')):.0f}" for e in mem) +
                     f" | {ratio:.2f} | {r['so_mb']:.1f} | {r['onnx_mb']:.1f} | {r['so_mb'] / r['onnx_mb']:.2f} |")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
