"""The end-to-end tests' shared pieces (tests/e2e_common.py): the kiln
binary (ROOT, BUILD, KILN, MODELS), run(), kiln(), the `exported`
fixture and ONNX Runtime (ort_fixture, ort_run); the test files import them from here (`from conftest import kiln`)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from e2e_common import BUILD, KILN, MODELS, ROOT, exported, kiln, ort_fixture, ort_run, run  # noqa: E402,F401
