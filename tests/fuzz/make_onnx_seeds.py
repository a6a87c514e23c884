"""Seeds for the ONNX importer's fuzz target that reach the op handlers'
arithmetic: one small model per operator, from ONNX's own node test cases,
with every small or integer input turned into an initializer (a constant).

The node tests give their inputs as graph inputs; most handlers need the
inputs that decide shapes, counts and axes (TopK's k, Pad's pads, Range's
limits, a window's sizes) known at compile time and stop at "must be known
at compile time" otherwise, so a byte-level fuzzer mutating those models
rarely gets past that check.  As constants, the values sit in the file as
little-endian bytes the fuzzer mutates directly, next to the attributes.

For each op type the smallest converted case (at most 2 KB) is written to
tests/fuzz/corpus/onnx/const_CASE.onnx.  Run with a Python whose onnx has
the node tests cached by the conformance runner:

    python3 tests/fuzz/make_onnx_seeds.py build/onnx-node-tests-1.23.2/node*/node

(the newest onnx, after `bash tests/onnx/newest_suite.sh`; or
/usr/bin/python3 with build/onnx-node-tests/node from onnx 1.12)."""
import glob
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fuzz", "corpus", "onnx")
MAX_BYTES = 2048
SMALL = 64  # inputs of at most this many elements become constants, as do integer ones


def convert(case):
    m = onnx.load(os.path.join(case, "model.onnx"))
    files = sorted(glob.glob(os.path.join(case, "test_data_set_0", "input_*.pb")),
                   key=lambda f: int(os.path.basename(f)[6:-3]))
    names = [i.name for i in m.graph.input if i.name not in {t.name for t in m.graph.initializer}]
    if len(files) != len(names):
        return None
    keep = []
    for name, f in zip(names, files):
        t = onnx.TensorProto()
        try:
            t.ParseFromString(open(f, "rb").read())
            a = numpy_helper.to_array(t)
        except Exception:
            return None  # a sequence or optional input
        small = a.size <= SMALL or np.issubdtype(a.dtype, np.integer) or a.dtype == np.bool_
        if small and a.size <= 4096:
            m.graph.initializer.append(numpy_helper.from_array(a, name))
        else:
            keep.append(name)
    kept = [i for i in m.graph.input if i.name in keep or i.name not in names]
    del m.graph.input[:]
    m.graph.input.extend(kept)
    data = m.SerializeToString()
    return data if len(data) <= MAX_BYTES else None


def main(dirs):
    best = {}
    for d in dirs:
        for case in sorted(glob.glob(os.path.join(d, "test_*"))):
            try:
                ops = sorted({n.op_type for n in onnx.load(os.path.join(case, "model.onnx")).graph.node})
            except Exception:
                continue
            data = convert(case)
            if not data or not ops:
                continue
            key = ",".join(ops)
            if key not in best or len(data) < len(best[key][1]):
                best[key] = (os.path.basename(case)[5:], data)
    for name, data in best.values():
        with open(os.path.join(OUT, f"const_{name}.onnx"), "wb") as f:
            f.write(data)
    print(f"wrote {len(best)} seeds to {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:] or [os.path.join(ROOT, "build", "onnx-node-tests", "node")])
