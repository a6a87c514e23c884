#!/usr/bin/env bash
# Compile the digits model with `kiln compile`, build examples/embed_model.c
# against the runtime library alone, and run it.  From the repository root,
# after building:  PATH="$PWD/build:$PATH" bash examples/embed_model.sh
set -euo pipefail
mkdir -p build/examples
set -x
kiln compile models/digits/digits.onnx -o build/examples/digits.so --input-shapes "image:[1,1,8,8]" --quiet-fallback
cc -std=c11 -Wall -Wextra -Werror examples/embed_model.c -Iinclude -Lbuild -lkiln_runtime \
  -Wl,-rpath,'$ORIGIN/..' -o build/examples/embed_model
build/examples/embed_model build/examples/digits.so models/digits/heldout_0.npy
