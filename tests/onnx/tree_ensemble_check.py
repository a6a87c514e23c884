"""ai.onnx.ml TreeEnsemble through Kiln against onnx.reference on fresh
random ensembles: several trees of random shapes (a single-leaf tree
among them), every node mode (LEQ, LT, GTE, GT, EQ, NEQ and set
membership), missing values tracking true, one to four targets, each
aggregate function, float32 and float64 inputs with NaNs and values equal
to the splits.  Runs under the newest onnx (the venv of
tests/onnx/newest_suite.sh); called by test_tree_ensemble.py.

Usage: tree_ensemble_check.py KILN WORKDIR SEED
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

KILN, WORK, SEED = sys.argv[1], sys.argv[2], int(sys.argv[3])
RNG = np.random.default_rng(SEED)
F = 5
GRID = np.array([-1.0, 0.0, 0.5, 1.0, 2.0])  # splits and inputs come from here, so ties happen


def ensemble(npdt, ntrees, ntargets, agg):
    modes, splits, feats, tn, fn, tl, fl, tracks, members = [], [], [], [], [], [], [], [], []
    leaf_w, leaf_t, roots = [], [], []

    def leaf():
        leaf_w.append(float(RNG.choice(GRID) * 3 + RNG.integers(0, 5)))
        leaf_t.append(int(RNG.integers(0, ntargets)))
        return len(leaf_w) - 1

    def node(depth):
        i = len(modes)
        m = int(RNG.integers(0, 7))
        modes.append(m)
        splits.append(float(RNG.choice(GRID)))
        feats.append(int(RNG.integers(0, F)))
        tracks.append(int(RNG.integers(0, 2)))
        tn.append(0), fn.append(0), tl.append(0), fl.append(0)
        if m == 6:  # set membership: its set now, in the reference's visiting order; no 0.0 in a set,
            # which the reference's `while (v := next(it)) and not isnan(v)` takes for the set's end
            members.extend(float(v) for v in RNG.choice(GRID[GRID != 0], int(RNG.integers(1, 4)), replace=False))
            members.append(np.nan)
        for ids, leafs in ((tn, tl), (fn, fl)):
            if depth >= 3 or RNG.random() < 0.3:
                ids[i], leafs[i] = leaf(), 1
            else:
                ids[i], leafs[i] = node(depth + 1), 0
        return i

    for t in range(ntrees):
        if t == 1:  # a single-leaf tree: the reference reads the leaf at the root's index
            r = len(modes)
            modes.append(0), splits.append(0.0), feats.append(0), tracks.append(0)
            while len(leaf_w) <= r:
                leaf()
            tn.append(r), fn.append(r), tl.append(1), fl.append(1)
            roots.append(r)
            continue
        roots.append(node(0))
    t = lambda name, v, dt: numpy_helper.from_array(np.array(v, dtype=dt), name)
    attrs = dict(nodes_modes=t("nodes_modes", modes, np.uint8), nodes_splits=t("nodes_splits", splits, npdt),
                 nodes_featureids=feats, nodes_truenodeids=tn, nodes_falsenodeids=fn, nodes_trueleafs=tl,
                 nodes_falseleafs=fl, nodes_missing_value_tracks_true=tracks, leaf_targetids=leaf_t,
                 leaf_weights=t("leaf_weights", leaf_w, npdt), tree_roots=roots, n_targets=ntargets,
                 aggregate_function=agg)
    if members:
        attrs["membership_values"] = t("membership_values", members, npdt)
    return attrs


def run(case, npdt, attrs, x):
    d = os.path.join(WORK, case)
    os.makedirs(d, exist_ok=True)
    ot = TensorProto.FLOAT if npdt == np.float32 else TensorProto.DOUBLE
    g = helper.make_graph([helper.make_node("TreeEnsemble", ["x"], ["y"], domain="ai.onnx.ml", **attrs)], "g",
                          [helper.make_tensor_value_info("x", ot, list(x.shape))],
                          [helper.make_tensor_value_info("y", ot, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("ai.onnx.ml", 5)])
    m.ir_version = 10
    p = os.path.join(d, "m.onnx")
    onnx.save(m, p)
    want = ReferenceEvaluator(m).run(None, {"x": x})[0]
    np.save(os.path.join(d, "x.npy"), x)
    r = subprocess.run([KILN, "compile", p, "-o", os.path.join(d, "m.so")], capture_output=True, text=True)
    if r.returncode:
        return f"compile failed: {r.stderr}"
    r = subprocess.run([KILN, "run", os.path.join(d, "m.so"), "--inputs", os.path.join(d, "x.npy"), "-o",
                        os.path.join(d, "o.npz")], capture_output=True, text=True)
    if r.returncode:
        return f"run failed: {r.stderr}"
    with np.load(os.path.join(d, "o.npz")) as z:
        got = z[z.files[0]]
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"got {got.dtype}{got.shape}, expected {want.dtype}{want.shape}"
    if not np.allclose(got, want, rtol=1e-6, atol=1e-6):
        i = np.argmax(~np.isclose(got, want, rtol=1e-6, atol=1e-6))
        return f"values differ, e.g. at {np.unravel_index(i, got.shape)}: got {got.ravel()[i]} expected {want.ravel()[i]}"
    return None


fails = 0
for k in range(12):
    npdt = np.float32 if k % 2 == 0 else np.float64
    agg, ntargets, ntrees = k % 4, int(RNG.integers(1, 5)), int(RNG.integers(1, 5))
    attrs = ensemble(npdt, ntrees, ntargets, agg)
    x = RNG.choice(GRID, (40, F)).astype(npdt)
    x[RNG.random(x.shape) < 0.1] = np.nan
    why = run(f"c{k}", npdt, attrs, x)
    name = f"case {k} ({np.dtype(npdt).name}, {ntrees} trees, {ntargets} targets, aggregate {agg})"
    print(("FAIL " if why else "ok ") + name + (f": {why}" if why else ""))
    fails += why is not None
sys.exit(1 if fails else 0)
