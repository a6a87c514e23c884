"""The ONNX frontend tests' paths and environment (tests/onnx): the kiln
binary, the environment its commands run in, and the Python of the newest
onnx release (build/onnx-venv, made by `bash tests/onnx/newest_suite.sh
--setup`; KILN_ONNX_VENV names another).  The test files import them from
here, not from conftest.py: pytest loads every test folder's conftest.py
as the one module `conftest`, so `from conftest import ...` would find
another folder's when pytest collects several (tests/onnx tests/models)."""
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("KILN_BUILD_DIR", os.path.join(ROOT, "build"))
KILN = os.path.join(BUILD, "kiln")
VENV_PY = os.path.join(os.environ.get("KILN_ONNX_VENV", os.path.join(ROOT, "build", "onnx-venv")), "bin", "python")
# the small generated models compile faster at -O1; KILN_CFLAGS overrides
ENV = dict(os.environ, KILN_CFLAGS=os.environ.get("KILN_CFLAGS", "-O1 -march=native -fPIC -std=gnu11"))


def newest_python():
    """The venv's Python (the newest onnx); fails the test if it is missing."""
    if not os.access(VENV_PY, os.X_OK):
        pytest.fail(f"{VENV_PY} is missing: make it with bash tests/onnx/newest_suite.sh --setup")
    return VENV_PY
