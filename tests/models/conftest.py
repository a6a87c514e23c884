"""The end-to-end tests' shared pieces are in tests/e2e_common.py: the kiln
binary (ROOT, BUILD, KILN, MODELS), run(), kiln(), the `exported` fixture
(made visible here) and ONNX Runtime (ort_fixture, ort_run).  The test files
import them from there (`from e2e_common import kiln`), not from conftest:
pytest loads every test folder's conftest.py as the one module `conftest`,
so `from conftest import ...` would find another folder's when pytest
collects several (tests/onnx tests/models)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from e2e_common import exported  # noqa: E402,F401 (the fixture)
