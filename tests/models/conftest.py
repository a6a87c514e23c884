"""The end-to-end tests' shared pieces (tests/e2e_common.py): the kiln
binary (ROOT, BUILD, KILN, MODELS), run(), kiln() and the `exported`
fixture; the test files import them from here (`from conftest import kiln`)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from e2e_common import BUILD, KILN, MODELS, ROOT, exported, kiln, run  # noqa: E402,F401
