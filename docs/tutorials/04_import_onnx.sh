#!/usr/bin/env bash
# Tutorial 4 (kiln command): compile and run an ONNX model, then read the
# graph after the optimization passes.  Run from the repository root after
# building, and after 04_import_onnx.py (which writes conv_bn.onnx):
#     PATH="$PWD/build:$PATH" bash docs/tutorials/04_import_onnx.sh
set -euo pipefail

run() {  # print a command as typed, then run it
  local a line="\$ kiln"
  for a in "${@:2}"; do
    case $a in *[![:alnum:]_./:=,-]*) line+=" '$a'" ;; *) line+=" $a" ;; esac
  done
  echo "$line"
  "$@"
}

mkdir -p build/tutorials
run kiln compile models/digits/digits.onnx -o build/tutorials/digits.so --input-shapes "image:[16,1,8,8]"
run kiln run build/tutorials/digits.so --inputs models/digits/sample16.npz --print-top 1
run kiln inspect build/tutorials/digits.so

# conv + batch norm + relu: batch norm becomes a scale and a shift, the scale
# folds into the convolution's weights, and the convolution takes the
# blocked layout its template wants.
run kiln show build/tutorials/conv_bn.onnx --input-shapes "data:[1,3,8,8]" --dump-after all
