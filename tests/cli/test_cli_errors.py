"""The kiln command's promises about bad input: usage errors exit 2 (as
docs/cli.md says), work that fails exits 1, both with one line that says
what to do; --inputs never has inputs made up for it; an interrupted
tune resumes; a tune whose every candidate failed is a failure; the
model's output names survive to kiln run -o and Python."""
import json
import os
import re

import numpy as np
import pytest

from e2e_common import BUILD, ROOT, kiln

DIGITS = os.path.join(ROOT, "models", "digits", "digits.onnx")
SHAPES = ["--input-shapes", "image:[1,1,8,8]"]


@pytest.fixture(scope="module")
def digits_so(tmp_path_factory):
    so = str(tmp_path_factory.mktemp("digits") / "digits.so")
    kiln("compile", DIGITS, "-o", so, *SHAPES, "--quiet-fallback")
    return so


def status(code, *args, expect):
    p = kiln(*args, check=False)
    assert p.returncode == code, f"kiln {args}: exit {p.returncode}, expected {code}:\n{p.stderr}"
    lines = [l for l in p.stderr.strip().splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("kiln"), p.stderr
    assert re.search(expect, p.stderr), f"expected /{expect}/ in:\n{p.stderr}"
    return p


def test_usage_errors_exit_2(digits_so, tmp_path):
    status(2, "run", digits_so, "--repeat", "1000000000000", expect="--repeat must be 1 to")
    status(2, "run", digits_so, "--repeat", "0", expect="--repeat must be 1 to")
    status(2, "run", digits_so, "--repeat", "lots", expect="non-negative integer")
    status(2, "run", digits_so, "--number", "99999999999999999999999", expect="non-negative integer")
    status(2, "run", digits_so, "--threads", "100000", expect="--threads must be 1 to 1024")
    status(2, "run", digits_so, "--profile-csv", str(tmp_path / "p.csv"), expect="--profile-csv works only with --profile")
    status(2, "run", digits_so, "--profile-trace", str(tmp_path / "p.json"), expect="works only with --profile")
    status(2, "run", digits_so, "--fill-mode", "noise", expect="random, zeros or ones")
    status(2, "run", digits_so, "--no-such-flag", expect="unknown option")
    status(2, "compile", DIGITS, "-O", "7", *SHAPES, expect="-O must be 0 to 3")
    status(2, "show", DIGITS, "-O", "9", *SHAPES, expect="-O must be 0 to 3")
    status(2, "tasks", DIGITS, "-O", "4", *SHAPES, expect="-O must be 0 to 3")
    status(2, "tune", DIGITS, *SHAPES, expect="missing -o")
    log = str(tmp_path / "x.json")
    status(2, "tune", DIGITS, *SHAPES, "-o", log, "--tasks", "0", expect="numbered 1-4|from 1")
    status(2, "tune", DIGITS, *SHAPES, "-o", log, "--tasks", "5", expect="task 5 does not exist .*numbered 1-4")
    status(2, "tune", DIGITS, *SHAPES, "-o", log, "--parallel", "100000", expect="--parallel must be 1 to 1024")
    status(2, "tune", DIGITS, *SHAPES, "-o", log, "--timeout", "inf", expect="positive number")
    status(2, "nosuchcommand", expect="unknown command")
    # work that fails is 1
    status(1, "run", str(tmp_path / "none.so"), expect="none.so")


def two_input_model(path):
    import onnx
    from onnx import TensorProto, helper
    g = helper.make_graph([helper.make_node("Add", ["a", "b"], ["sum"], name="add")], "g",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3]),
                           helper.make_tensor_value_info("b", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("sum", TensorProto.FLOAT, [2, 3])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


def test_inputs_file_must_give_every_input(tmp_path):
    model, so = str(tmp_path / "add.onnx"), str(tmp_path / "add.so")
    two_input_model(model)
    kiln("compile", model, "-o", so)
    only_a = str(tmp_path / "a.npz")
    np.savez(only_a, a=np.ones((2, 3), np.float32))
    status(1, "run", so, "--inputs", only_a, expect=r"input 'b' \(\[2,3\]\) is not in the --inputs file")
    status(2, "run", so, "--inputs", only_a, "--fill-mode", "zeros", expect="only when no --inputs")
    both = str(tmp_path / "ab.npz")
    np.savez(both, a=np.ones((2, 3), np.float32), b=np.full((2, 3), 2, np.float32))
    out = str(tmp_path / "o.npz")
    p = kiln("run", so, "--inputs", both, "-o", out)
    assert "filling" not in p.stderr
    with np.load(out) as z:
        assert z.files == ["sum"] and np.all(z["sum"] == 3)  # the model's output name
    # without --inputs, random inputs, and a note that says so
    p = kiln("run", so)
    assert "no --inputs given: filling the 2 input(s) with random values" in p.stderr, p.stderr
    assert "output 0 (sum): [2,3] float" in p.stdout


def test_output_names_kept(digits_so, tmp_path):
    # the ONNX output is 'logits', computed by the kernel fused_nn_dense_add
    out = str(tmp_path / "o.npz")
    kiln("run", digits_so, "--inputs", os.path.join(ROOT, "models", "digits", "heldout_0.npy"), "-o", out)
    with np.load(out) as z:
        assert z.files == ["logits"] and z["logits"].shape == (1, 10)
    so_json = kiln("inspect", digits_so).stdout
    assert "fused_nn_dense_add" in so_json
    import subprocess
    import sys
    code = ("import kiln, sys\n"
            "m = kiln.graph_executor.GraphModule(kiln.runtime.load_module(sys.argv[1])['default'](kiln.cpu()))\n"
            "m.run()\n"
            "print(m.get_output_names(), m.get_output('logits').numpy().shape)\n")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), KILN_LIBRARY_PATH=BUILD)
    p = subprocess.run([sys.executable, "-c", code, digits_so], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "['logits'] (1, 10)", p.stdout


def test_tune_resumes_after_a_torn_line(tmp_path):
    log = str(tmp_path / "t.json")
    common = ["tune", DIGITS, *SHAPES, "-o", log, "--tasks", "4", "--tuner", "random", "--number", "1",
              "--repeat", "1", "--parallel", "2", "--verify", "0"]
    kiln(*common, "--trials", "3")
    lines = open(log).read().splitlines()
    assert len(lines) == 3
    # an interrupted tune: the last record cut in the middle, no newline
    with open(log, "w") as f:
        f.write("\n".join(lines[:2]) + "\n" + lines[2][: len(lines[2]) // 2])
    p = kiln(*common, "--trials", "4")
    assert "ends with a torn record (an interrupted tune); dropping it and resuming" in p.stderr, p.stderr
    recs = [json.loads(l) for l in open(log)]  # every line parses again
    assert len(recs) == 4
    # a broken line that is not the last is still an error naming it
    with open(log, "a") as f:
        f.write("{not json\n")
        f.write(lines[0] + "\n")
    p = kiln(*common, "--trials", "5", check=False)
    assert p.returncode == 1 and re.search(r"kiln tune: task 4 .*: resuming from .*t\.json:5: tuning record: not valid JSON",
                                           p.stderr), p.stderr


def test_tune_where_every_candidate_fails(tmp_path):
    log = str(tmp_path / "f.json")
    # no candidate can be built in a microsecond
    p = kiln("tune", DIGITS, *SHAPES, "-o", log, "--tasks", "4", "--tuner", "random", "--trials", "2",
             "--number", "1", "--repeat", "1", "--parallel", "2", "--verify", "0", "--build-timeout", "0.000001",
             check=False)
    assert p.returncode == 1, p.stderr
    assert re.search(r"task 4 \(dense_nopack.x86 .*\): every candidate failed \(2 build timeout\)", p.stderr), p.stderr
    assert "every candidate of every task failed" in p.stderr
    assert "compile with --tuning-records" not in p.stdout


def test_task_numbers_agree(tmp_path):
    tasks = kiln("tasks", DIGITS, *SHAPES).stdout
    assert "[Task  4/ 4] dense_nopack.x86" in tasks
    log = str(tmp_path / "n.json")
    p = kiln("tune", DIGITS, *SHAPES, "-o", log, "--tasks", "4", "--tuner", "random", "--trials", "2", "--number", "1",
             "--repeat", "1", "--parallel", "2", "--verify", "0")
    assert "[Task  4/ 4]" in p.stderr
    assert re.search(r"^4\s+dense_nopack\.x86\s+\[\(1,64\),\(10,64\)\]", p.stdout, re.M), p.stdout
    assert all(json.loads(l)["input"][2][1] == ["TENSOR", [10, 64], "float32"] for l in open(log))


def test_fuzz_findings_stay_fixed(digits_so, tmp_path):
    """Inputs the fuzzers of tests/fuzz found, through the command."""
    # an .npz whose member header claims far more bytes than it holds:
    # kiln run allocated what it claimed (out of memory) before reading
    data = open(os.path.join(ROOT, "tests", "fuzz", "regressions", "npy", "npz-member-claims-huge-size"), "rb").read()
    npz = tmp_path / "huge.npz"
    npz.write_bytes(data[1:])  # the first byte chose the .npz reader
    status(1, "run", digits_so, "--inputs", str(npz), expect="cannot read member .* bytes its header gives")
    # Clip with a non-constant bound of another type than x: the failed
    # maximum call left x NULL and the handler read it
    clip = os.path.join(ROOT, "tests", "fuzz", "regressions", "onnx", "clip-bound-of-another-type.onnx")
    p = kiln("show", clip, check=False)
    assert p.returncode == 1 and p.stderr.startswith("kiln show: "), p.stderr
