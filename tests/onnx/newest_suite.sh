#!/usr/bin/env bash
# The newest onnx release's node tests through Kiln: makes the venv
# build/onnx-venv (Debian's python3 -m venv; onnx and numpy from PyPI at the
# versions pinned below) on first use, then runs
# tests/onnx/run_conformance.py --suite newest under it.  Arguments are
# passed on (-j, -k PATTERN, --kiln, --report ...).  With --setup only the
# venv is made (the model tests use its onnx.version_converter).
# Report: build/onnx_conformance_newest.md.
# Bump ONNX_VERSION when onnx releases a new opset (and regenerate
# src/frontend/onnx/onnx_schema_versions.c, see tools/onnx_schema_versions.py).
set -euo pipefail
cd "$(dirname "$0")/../.."
ONNX_VERSION=1.23.2
VENV=${KILN_ONNX_VENV:-build/onnx-venv}
if ! "$VENV/bin/python" -c "import onnx, numpy, sys; sys.exit(onnx.__version__ != '$ONNX_VERSION')" 2>/dev/null; then
  echo "making $VENV (onnx $ONNX_VERSION from PyPI) ..."
  rm -rf "$VENV"
  /usr/bin/python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check "onnx==$ONNX_VERSION" numpy
fi
if [ "${1:-}" = "--setup" ]; then exit 0; fi
exec "$VENV/bin/python" tests/onnx/run_conformance.py --suite newest "$@"
