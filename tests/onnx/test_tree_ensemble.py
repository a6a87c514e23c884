"""ai.onnx.ml TreeEnsemble (src/frontend/onnx/ops/ml.c).

test_against_reference runs tests/onnx/tree_ensemble_check.py under the
venv's newest onnx (build/onnx-venv, made by bash tests/onnx/newest_suite.sh
--setup): 12 fresh random ensembles (every node mode, set membership,
missing values, each aggregate function, float32 and float64) compared with
onnx.reference.  The others check that malformed ensembles are clear
errors.  Models are built with raw attributes, which Debian's onnx 1.12
accepts without knowing the op.

Run: KILN_BUILD_DIR=build /usr/bin/python3 -m pytest -q tests/onnx/test_tree_ensemble.py
"""
import subprocess

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnx_env import KILN, ENV


def test_against_reference(newest_onnx_check):
    newest_onnx_check("tree_ensemble_check.py", 12)


def base(**over):
    """One tree: node 0 (x0 <= 0.5) -> leaf 0 / node 1 (x1 < 1) -> leaves 1, 2."""
    t = lambda name, v, dt: numpy_helper.from_array(np.array(v, dtype=dt), name)
    a = dict(nodes_modes=t("nodes_modes", [0, 1], np.uint8), nodes_splits=t("nodes_splits", [0.5, 1.0], np.float32),
             nodes_featureids=[0, 1], nodes_truenodeids=[0, 1], nodes_falsenodeids=[1, 2], nodes_trueleafs=[1, 1],
             nodes_falseleafs=[0, 1], leaf_targetids=[0, 0, 0],
             leaf_weights=t("leaf_weights", [1.0, 2.0, 3.0], np.float32), tree_roots=[0], n_targets=1)
    a.update(over)
    return a


def compile_err(tmp_path, attrs, shape=(3, 2)):
    g = helper.make_graph([helper.make_node("TreeEnsemble", ["x"], ["y"], domain="ai.onnx.ml", **attrs)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("ai.onnx.ml", 5)])
    m.ir_version = 10
    p = str(tmp_path / "m.onnx")
    with open(p, "wb") as f:
        f.write(m.SerializeToString())
    r = subprocess.run([KILN, "compile", p, "-o", str(tmp_path / "m.so")], capture_output=True, text=True, env=ENV)
    return r


def test_small_tree_by_hand(tmp_path):
    r = compile_err(tmp_path, base())
    assert r.returncode == 0, r.stderr
    x = np.array([[0.0, 5.0], [1.0, 0.0], [1.0, 2.0]], np.float32)
    np.save(tmp_path / "x.npy", x)
    r = subprocess.run([KILN, "run", str(tmp_path / "m.so"), "--inputs", str(tmp_path / "x.npy"), "-o",
                        str(tmp_path / "o.npz")], capture_output=True, text=True, env=ENV)
    assert r.returncode == 0, r.stderr
    with np.load(tmp_path / "o.npz") as z:
        assert z[z.files[0]].ravel().tolist() == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("over,what", [
    (dict(nodes_falseleafs=[0, 0], nodes_falsenodeids=[1, 0]), "is its own descendant: the trees have a cycle"),
    (dict(nodes_featureids=[0, 7]), "nodes_featureids[1] = 7 is outside X's 2 features"),
    (dict(leaf_targetids=[0, 3, 0]), "leaf_targetids[1] = 3 is outside [0, n_targets = 1)"),
    (dict(post_transform=1), "post_transform 1 is not supported"),
    (dict(nodes_truenodeids=[9, 1]), "leaf index 9 is outside the 3 leaves"),
    (dict(nodes_modes=numpy_helper.from_array(np.array([6, 1], np.uint8), "nodes_modes")),
     "is a set membership node but there is no membership_values"),
])
def test_malformed_ensembles_are_clear_errors(tmp_path, over, what):
    r = compile_err(tmp_path, base(**over))
    assert r.returncode != 0 and what in r.stderr, r.stderr
