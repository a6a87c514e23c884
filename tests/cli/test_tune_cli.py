"""kiln tasks / tune / records and kiln compile --tuning-records: the task
list reads like AutoTVM's, tuning writes v0.2 records that resume, the
records apply at compile time and the profile's Task column names them,
and every error is one line with a non-zero exit."""
import json
import os
import re

from e2e_common import ROOT, kiln

DIGITS = os.path.join(ROOT, "models", "digits", "digits.onnx")
SHAPES = ["--input-shapes", "image:[1,1,8,8]"]


def fails(*args, expect):
    p = kiln(*args, check=False)
    assert p.returncode != 0, f"kiln {args} should fail:\n{p.stdout}"
    lines = [l for l in p.stderr.strip().splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("kiln"), p.stderr
    assert re.search(expect, p.stderr), f"expected /{expect}/ in:\n{p.stderr}"


def test_help():
    out = kiln("--help").stdout
    for cmd in ["tasks", "tune", "records"]:
        assert cmd in out
        assert "usage: kiln " + cmd in kiln(cmd, "--help").stdout
    h = kiln("tune", "--help").stdout
    for opt in ["--trials", "--tuner", "--early-stopping", "--tasks", "--number", "--repeat", "--min-repeat-ms",
                "--timeout", "--parallel", "--verify", "--no-baseline", "--time-limit"]:
        assert opt in h
    assert "--tuning-records" in kiln("compile", "--help").stdout


def test_tasks_listing():
    out = kiln("tasks", DIGITS, *SHAPES).stdout
    assert "[Task  1/ 4] conv2d_NCHWc.x86 - Search space size: 80" in out
    assert "[Task  3/ 4] dense_nopack.x86 - Search space size: 56" in out
    assert "('TENSOR', (1, 16, 4, 4), 'float32')" in out
    assert "used by: fused_nn_contrib_conv2d_NCHWc_add_nn_relu_1" in out


def test_tune_compile_profile(tmp_path):
    log = str(tmp_path / "digits.json")
    p = kiln("tune", DIGITS, *SHAPES, "-o", log, "--tasks", "2", "--trials", "6", "--tuner", "random",
             "--number", "2", "--repeat", "2", "--parallel", "2", "--verify", "0", "--build-timeout", "300",
             "--timeout", "60")
    assert re.search(r"\[Task  2/ 4\]\s+Current/Best:\s+[\d.]+/\s*[\d.]+ GFLOPS \| Progress: \(6/6\) \| [\d.]+ s Done.",
                     p.stderr), p.stderr
    recs = [json.loads(l) for l in open(log)]
    assert len(recs) == 6
    for r in recs:
        assert r["version"] == 0.2 and r["input"][1] == "conv2d_NCHWc.x86"
        assert r["input"][2][0] == ["TENSOR", [1, 16, 4, 4], "float32"]
        assert r["result"][1] == 0 and len(r["result"][0]) == 2
    # the same command again resumes: nothing new is measured
    kiln("tune", DIGITS, *SHAPES, "-o", log, "--tasks", "2", "--trials", "6")
    assert len(open(log).read().splitlines()) == 6
    # the records apply; the other tasks fall back with one warning each
    so = str(tmp_path / "digits.so")
    c = kiln("compile", DIGITS, *SHAPES, "-o", so, "--tuning-records", log, "--no-shipped-records")
    warnings = [l for l in c.stderr.splitlines() if "warning: no tuning record" in l]
    assert len(warnings) == 3, c.stderr
    prof = kiln("run", so, "--profile").stdout
    row = [l for l in prof.splitlines() if l.startswith("fused_nn_contrib_conv2d_NCHWc_add_nn_relu_1 ")][0]
    assert re.search(r"digits\.json:\d+", row), row
    q = kiln("compile", DIGITS, *SHAPES, "-o", so, "--no-shipped-records", "--quiet-fallback")
    assert "warning" not in q.stderr
    # the summary and pick-best
    s = kiln("records", log).stdout
    assert "conv2d_NCHWc.x86" in s and "[(1,16,4,4),(32,16,3,3)] s1 p1" in s
    best = str(tmp_path / "best.json")
    kiln("records", log, "--pick-best", "-o", best)
    kept = [json.loads(l) for l in open(best)]
    blocks = [dict((e[0], e[2]) for e in r["config"]["entity"])["tile_ic"][-1] for r in kept]
    assert 1 <= len(kept) <= 6 and len(set(blocks)) == len(blocks)  # the best per input block
    # nothing beats the fallback (measured first) by 1000%: only its record stays
    kiln("records", log, "--pick-best", "--min-gain", "1000", "-o", best)
    kept = [json.loads(l) for l in open(best)]
    assert len(kept) == 1 and kept[0]["config"] == recs[0]["config"]


def test_errors(tmp_path):
    fails("tune", DIGITS, *SHAPES, expect="missing -o")
    fails("tune", DIGITS, *SHAPES, "-o", str(tmp_path / "x.json"), "--tuner", "annealing", expect="unknown tuner")
    fails("tune", DIGITS, *SHAPES, "-o", str(tmp_path / "x.json"), "--tasks", "9", expect="task 9 does not exist")
    fails("tune", DIGITS, *SHAPES, "-o", str(tmp_path / "x.json"), "--tasks", "1-", expect="bad range")
    fails("tune", DIGITS, *SHAPES, "-o", str(tmp_path / "x.json"), "--timeout", "0", expect="positive number")
    fails("tasks", str(tmp_path / "nope.onnx"), expect="nope.onnx")
    bad = tmp_path / "bad.json"
    bad.write_text('{"input": ["llvm"]}\n')
    fails("compile", DIGITS, *SHAPES, "-o", str(tmp_path / "x.so"), "--tuning-records", str(bad), expect=r"bad\.json:1")
    fails("compile", DIGITS, *SHAPES, "-o", str(tmp_path / "x.so"), "--tuning-records", str(tmp_path / "none.json"),
          expect="cannot read")
    fails("records", str(bad), expect=r"bad\.json:1")
    fails("records", str(tmp_path / "x.json"), "--pick-best", "--min-gain", "-1", expect="min-gain|cannot")
