"""Shared pieces of the end-to-end tests (tests/cli and tests/models, whose
conftest.py files import this): the kiln binary, running commands, and the
exported torchvision models (tools/export_models.py, cached in build/)."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("KILN_BUILD_DIR", os.path.join(ROOT, "build"))
KILN = os.path.join(BUILD, "kiln")
MODELS = os.path.join(BUILD, "models")

# The verifiers between passes (graph_verify after every graph pass,
# ir_verify after every lowering pass) run in every compile these tests
# make, in this process and in the kiln commands it starts; a broken
# invariant fails the test that hit it.  KILN_VERIFY=0 turns them off.
os.environ.setdefault("KILN_VERIFY", "1")


def run(args, **kw):
    """Run a command; return the CompletedProcess (text)."""
    return subprocess.run(args, capture_output=True, text=True, **kw)


def kiln(*args, check=True, **kw):
    p = run([KILN, *args], **kw)
    if check and p.returncode != 0:
        raise AssertionError(f"kiln {' '.join(args)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


@pytest.fixture(scope="session")
def exported():
    """Export a model once per session; returns its path prefix."""
    def get(name):
        p = run([sys.executable, os.path.join(ROOT, "tools", "export_models.py"), "--out", MODELS, name])
        assert p.returncode == 0, p.stderr
        return os.path.join(MODELS, name)
    return get
