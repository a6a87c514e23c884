"""pytest setup: import kiln from the source tree's python/ folder (the
package finds build/libkiln.so itself, or KILN_LIBRARY_PATH)."""
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))

import numpy as np  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _seed_numpy():
    """Fresh random inputs, but the same ones on every run."""
    np.random.seed(20240611)
