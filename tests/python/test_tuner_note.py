"""The seeds' tuner note (最简单的Tuner分析.md) with tvm replaced by kiln:
a user-defined matmul template tuned with each tuner, its best record
applied.  The template is run by the C tuning engine (its space is the
engine's) and its candidates are measured in the same worker processes as
the built-in templates."""
import json
import os

import numpy as np
import pytest

import kiln
from kiln import autotvm

N, L, M = 64, 64, 64


@autotvm.template("tutorial/matmul")
def matmul(N, L, M, dtype):
    A = kiln.placeholder((N, L), name="A", dtype=dtype)
    B = kiln.placeholder((L, M), name="B", dtype=dtype)

    k = kiln.reduce_axis((0, L), name="k")
    C = kiln.compute((N, M), lambda i, j: kiln.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = kiln.create_schedule(C.op)

    # schedule
    y, x = s[C].op.axis
    k = s[C].op.reduce_axis[0]

    # get the config object
    cfg = autotvm.get_config()

    # define search space
    cfg.define_knob("tile_y", [1, 2, 4, 8, 16])
    cfg.define_split("tile_x", x, num_outputs=2)
    cfg.add_flop(2 * N * L * M)

    # schedule according to config
    yo, yi = s[C].split(y, cfg["tile_y"].val)
    xo, xi = cfg["tile_x"].apply(s, C, x)

    s[C].reorder(yo, xo, k, yi, xi)

    return s, [A, B, C]


# The note's template exactly, tvm replaced by kiln (the note lost its
# indentation; restored here).
# Matmul V1: List candidate values
@autotvm.template  # 1. use a decorator
def matmul_v1(N, L, M, dtype):
    A = kiln.placeholder((N, L), name='A', dtype=dtype)
    B = kiln.placeholder((L, M), name='B', dtype=dtype)

    k = kiln.reduce_axis((0, L), name='k')
    C = kiln.compute((N, M), lambda i, j: kiln.sum(A[i, k] * B[k, j], axis=k), name='C')
    s = kiln.create_schedule(C.op)

    # schedule
    y, x = s[C].op.axis
    k = s[C].op.reduce_axis[0]

    # 2. get the config object
    cfg = autotvm.get_config()

    # 3. define search space
    cfg.define_knob("tile_y", [1, 2, 4, 8, 16])
    cfg.define_knob("tile_x", [1, 2, 4, 8, 16])

    # 4. schedule according to config
    yo, yi = s[C].split(y, cfg['tile_y'].val)
    xo, xi = s[C].split(x, cfg['tile_x'].val)

    s[C].reorder(yo, xo, k, yi, xi)

    return s, [A, B, C]


@autotvm.template("tutorial/matmul_v2")
def matmul_v2(N, L, M, dtype):
    """define_reorder and define_annotate as well."""
    A = kiln.placeholder((N, L), name="A", dtype=dtype)
    B = kiln.placeholder((L, M), name="B", dtype=dtype)
    k = kiln.reduce_axis((0, L), name="k")
    C = kiln.compute((N, M), lambda i, j: kiln.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = kiln.create_schedule(C.op)
    y, x = s[C].op.axis
    k = s[C].op.reduce_axis[0]
    cfg = autotvm.get_config()
    cfg.define_split("tile_y", y, num_outputs=2)
    cfg.define_split("tile_x", x, num_outputs=2)
    yo, yi = cfg["tile_y"].apply(s, C, y)
    xo, xi = cfg["tile_x"].apply(s, C, x)
    axes = [yo, xo, k, yi, xi]
    cfg.define_reorder("order", axes, policy="candidate",
                       candidate=[[yo, xo, k, yi, xi], [yo, xo, yi, k, xi]])
    cfg["order"].apply(s, C, axes)
    cfg.define_annotate("ann", [xi], policy="try_unroll")
    cfg["ann"].apply(s, C, [xi])
    return s, [A, B, C]


def run_matmul(s, args):
    f = kiln.build(s, args, target="llvm")
    a = np.random.rand(N, L).astype("float32")
    b = np.random.rand(L, M).astype("float32")
    c = kiln.nd.empty((N, M), "float32", kiln.cpu())
    f(kiln.nd.array(a), kiln.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4)


def test_config_space():
    task = autotvm.task.create("tutorial/matmul", args=(N, L, M, "float32"), target="llvm")
    assert len(task.config_space) == 5 * 7  # tile_y: 5 candidates; tile_x: the 7 factors of 64
    assert "tile_y" in repr(task.config_space) and task.flop == 2 * N * L * M
    v1 = autotvm.task.create(matmul_v1, args=(N, L, M, "float32"), target="llvm")
    assert len(v1.config_space) == 5 * 5
    v2 = autotvm.task.create("tutorial/matmul_v2", args=(N, L, M, "float32"), target="llvm")
    assert len(v2.config_space) == 7 * 7 * 2 * 2


@pytest.mark.parametrize("name", ["matmul_v1", "tutorial/matmul_v2"])
def test_every_config_computes_matmul(name):
    """Each config of the note's space (and of v2, with reorder and
    annotate) builds and computes the product."""
    task = autotvm.task.create(name, args=(N, L, M, "float32"), target="llvm")
    from kiln.autotvm.template import _Config, _run, lookup  # pylint: disable=import-outside-toplevel
    t = lookup(name)
    size = len(task.config_space)
    for index in sorted({0, size // 3, (2 * size) // 3, size - 1}):
        cfg = _Config({e[0]: (e[1], e[2]) for e in task.config_space.get(index)})
        s, args = _run(t.func, [N, L, M, "float32"], cfg)
        run_matmul(s, args)


@pytest.mark.parametrize("tuner", ["RandomTuner", "GridSearchTuner", "GATuner", "XGBTuner"])
def test_tune_and_apply_best(tuner, tmp_path):
    task = autotvm.task.create("tutorial/matmul", args=(N, L, M, "float32"), target="llvm")
    measure_option = autotvm.measure_option(builder="local", runner=autotvm.LocalRunner(number=5))
    log = str(tmp_path / "matmul.log")
    t = getattr(autotvm.tuner, tuner)(task)
    t.tune(n_trial=6, measure_option=measure_option, callbacks=[autotvm.callback.log_to_file(log)])
    assert t.best_flops > 0 and t.best_config is not None  # GFLOPS from cfg.add_flop
    recs = [json.loads(ln) for ln in open(log)]
    assert len(recs) >= 6
    ok = [r for r in recs if r["result"][1] == 0]
    assert len(ok) >= 5, [r["result"] for r in recs]
    assert all(r["input"][1] == "tutorial/matmul" and r["input"][2] == [N, L, M, "float32"] for r in recs)
    latest = {}  # a config measured again counts with its newest record (dispatch's rule)
    for r in ok:
        i = r["config"]["index"]
        if i not in latest or r["result"][3] >= latest[i]["result"][3]:
            latest[i] = r
    best = min(latest.values(), key=lambda r: sum(r["result"][0]) / len(r["result"][0]))
    want = {e[0]: e[2] for e in best["config"]["entity"]}

    with autotvm.apply_history_best(log):
        with kiln.target.Target("llvm"):
            s, arg_bufs = matmul(N, L, M, "float32")
    text = str(kiln.lower(s, arg_bufs, simple_mode=True))
    for loop, size in (("i.inner", want["tile_y"]), ("j.inner", want["tile_x"][-1])):
        assert ("for (%s, 0, %d)" % (loop, size) in text) == (size > 1), (want, text)
    run_matmul(s, arg_bufs)


def test_fallback_and_errors():
    s, args = matmul(N, L, M, "float32")  # no records: each knob's first choice
    run_matmul(s, args)
    with pytest.raises(kiln.KilnError, match="inside an @autotvm.template"):
        autotvm.get_config()
    with pytest.raises(kiln.KilnError, match="no template 'nope'"):
        autotvm.task.create("nope", args=(1,), target="llvm")
    with pytest.raises(kiln.KilnError, match="arm_cpu"):
        kiln.target.arm_cpu()
    t = kiln.target.create("llvm")  # a row of the C target table, resolved for this machine
    assert str(t).startswith("llvm") and t.kind == "llvm" and "cpu" in t.keys
    with t:
        assert kiln.target.Target.current() is t
    assert kiln.target.Target.current() is None
    with pytest.raises(kiln.KilnError, match="supported"):
        kiln.target.Target("nosuchtarget")
