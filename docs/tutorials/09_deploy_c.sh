#!/usr/bin/env bash
# Tutorial 9: the digits model as standalone C - compile it with the C
# compiler alone, run it, and check it against PyTorch's logits.
# Run from the repository root after building:
#     PATH="$PWD/build:$PATH" bash docs/tutorials/09_deploy_c.sh
set -euo pipefail

show() {  # print a command as typed, then run it
  local a line="\$"
  for a in "$@"; do
    case $a in *[![:alnum:]_./:=,-]*) line+=" '$a'" ;; *) line+=" $a" ;; esac
  done
  echo "$line"
  "$@"
}

rm -rf build/tutorials/digits_c && mkdir -p build/tutorials
show kiln compile models/digits/digits.onnx --input-shapes "image:[1,1,8,8]" \
  --emit c -o build/tutorials/digits_c --prefix digits --quiet-fallback
show ls build/tutorials/digits_c
# The API: one function, the caller's workspace, the shapes as macros
grep -E '^int digits_run|^#define DIGITS_(WORKSPACE_BYTES|INPUT0_SHAPE|OUTPUT0_SHAPE)' build/tutorials/digits_c/digits.h
# Built with the C compiler alone, as strictly as C99 allows
show make -s -C build/tutorials/digits_c CC=gcc CFLAGS='-O2 -std=c99 -Wall -Wextra -Werror'
show build/tutorials/digits_c/example models/digits/heldout_0.npy build/tutorials/digits_c/logits.npy
/usr/bin/python3 - <<'PY'
import numpy as np
got = np.load("build/tutorials/digits_c/logits.npy")
ref = np.load("models/digits/heldout.npz")["logits"][:1]
print("digit", int(got.argmax()), "- PyTorch says", int(ref.argmax()))
print("matches PyTorch within 1e-4:", bool(np.abs(got - ref).max() <= 1e-4 * np.abs(ref).max()))
PY
# The same model for any C99 compiler and no C library at all
show kiln compile models/digits/digits.onnx --input-shapes "image:[1,1,8,8]" \
  --emit c -o build/tutorials/digits_fs --prefix digits --quiet-fallback --isa generic --freestanding
show gcc -std=c99 -pedantic -Wall -Wextra -Werror -O2 -ffreestanding -nostdlib -shared -fPIC -Wl,--no-undefined \
  -o build/tutorials/digits_fs/libdigits.so build/tutorials/digits_fs/digits.c build/tutorials/digits_fs/digits_weights0.c
echo "undefined symbols: $(nm -u build/tutorials/digits_fs/libdigits.so | wc -l)"
show kiln inspect build/tutorials/digits_c
