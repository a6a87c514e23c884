#!/usr/bin/env bash
# The Python the int8 model tests quantize with (tests/models/test_int8_models.py,
# tools/quantize_models.py): makes the venv build/ort-venv (Debian's python3
# -m venv; onnxruntime, onnx and numpy from PyPI at the versions pinned below)
# unless it already has them.  tools/test.sh runs this before the model tests;
# $KILN_ORT_PYTHON, when set, is used instead and nothing is made.
set -euo pipefail
cd "$(dirname "$0")/../.."
ORT_VERSION=1.32.0
ONNX_VERSION=1.23.2
VENV=${KILN_ORT_VENV:-build/ort-venv}
if [ -n "${KILN_ORT_PYTHON:-}" ]; then exit 0; fi
if ! "$VENV/bin/python" -c "import onnxruntime, sys; sys.exit(onnxruntime.__version__ != '$ORT_VERSION')" 2>/dev/null; then
  echo "making $VENV (onnxruntime $ORT_VERSION from PyPI) ..."
  rm -rf "$VENV"
  /usr/bin/python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check "onnxruntime==$ORT_VERSION" "onnx==$ONNX_VERSION" numpy
fi
