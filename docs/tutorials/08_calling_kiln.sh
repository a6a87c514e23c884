#!/usr/bin/env bash
# Tutorial 8 (C): compile a model from a C program through the function
# registry, then run it from another C program that links only the runtime.
# Run from the repository root after building:
#     bash docs/tutorials/08_calling_kiln.sh
set -euo pipefail

show() {  # print a command as typed, then run it
  local a line="\$"
  for a in "$@"; do
    case $a in *[![:alnum:]_./:=,-]*) line+=" '$a'" ;; *) line+=" $a" ;; esac
  done
  echo "$line"
  "$@"
}

mkdir -p build/tutorials
# Kiln's headers are in include/ (dlpack.h comes from Debian's libdlpack-dev),
# its libraries in build/; the rpath finds them from build/tutorials/.
show cc -std=c11 -Wall examples/compile_model.c -Iinclude -Lbuild -lkiln -lkiln_runtime \
  -Wl,-rpath,'$ORIGIN/..' -o build/tutorials/compile_model
show cc -std=c11 -Wall examples/embed_model.c -Iinclude -Lbuild -lkiln_runtime \
  -Wl,-rpath,'$ORIGIN/..' -o build/tutorials/embed_model
show build/tutorials/compile_model models/digits/digits.onnx "image:[1,1,8,8]" build/tutorials/digits1.so
show build/tutorials/embed_model build/tutorials/digits1.so models/digits/heldout_0.npy
# The deployed program needs the runtime only, not the compiler:
echo '$ readelf -d build/tutorials/embed_model | grep NEEDED'
readelf -d build/tutorials/embed_model | grep NEEDED
