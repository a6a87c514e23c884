"""pytest setup: import kiln from the source tree's python/ folder (the
package finds build/libkiln.so itself, or KILN_LIBRARY_PATH)."""
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.append(os.path.join(ROOT, "tests"))  # e2e_common: the tests' shared helpers

# The verifiers between passes (graph_verify after every graph pass,
# ir_verify after every lowering pass) run in every compile these tests
# make, in this process and in the kiln commands it starts; a broken
# invariant fails the test that hit it.  KILN_VERIFY=0 turns them off.
os.environ.setdefault("KILN_VERIFY", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _seed_numpy():
    """Fresh random inputs, but the same ones on every run."""
    np.random.seed(20240611)
