"""Shared pieces of the ONNX frontend tests (tests/onnx).

Several tests check Kiln against onnx.reference of the newest onnx release,
which Debian's onnx 1.12 does not have: their checker scripts
(tests/onnx/*_check.py) run under the venv's Python (onnx_env.py).
The `newest_onnx_check` fixture runs one with a fresh seed and returns its
output; a failure names the seed, so the case can be run again."""
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from onnx_env import ENV, KILN, ROOT, newest_python  # noqa: E402


@pytest.fixture
def newest_onnx_check(tmp_path):
    """run(script, cases=N, at_least=False): run tests/onnx/SCRIPT KILN TMP SEED
    under the newest onnx with a fresh random seed; the script prints "ok ..."
    per case and exits 0.  Asserts the exit status and the number of cases
    (exactly N, or at least N); returns the script's stdout."""
    def run(script, cases, at_least=False, env=ENV):
        seed = int.from_bytes(os.urandom(4), "little")
        p = subprocess.run([newest_python(), os.path.join(ROOT, "tests", "onnx", script), KILN, str(tmp_path), str(seed)],
                           capture_output=True, text=True, env=env)
        assert p.returncode == 0, f"{script}, seed {seed}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
        n = p.stdout.count("ok ")
        assert (n >= cases if at_least else n == cases), f"{script}, seed {seed}: {n} cases ok, expected " \
            f"{'at least ' if at_least else ''}{cases}:\n{p.stdout[-3000:]}"
        return p.stdout
    return run
