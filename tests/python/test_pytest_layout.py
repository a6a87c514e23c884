"""The test folders collect together: `pytest tests/onnx tests/models
tests/cli` imports every test module of the three in one process (pytest
loads each folder's conftest.py as the one module `conftest`, so a test
file that imported its helpers from conftest found another folder's)."""
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def test_test_folders_collect_in_one_call():
    p = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                        "tests/onnx", "tests/models", "tests/cli"], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0 and " error" not in p.stdout.splitlines()[-1], p.stdout[-3000:] + p.stderr[-2000:]
    assert "tests/onnx/test_gradient.py::" in p.stdout and "tests/models/test_models.py::" in p.stdout \
        and "tests/cli/test_cli.py::" in p.stdout, p.stdout[-3000:]
