#!/usr/bin/env bash
# Tutorial 6: tune a matmul template's knobs, then a whole model, and reuse
# the records at compile time.  Run from the repository root after building:
#     PATH="$PWD/build:$PATH" bash docs/tutorials/06_tuning.sh
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
cd build/tutorials
rm -f digits_records.json
cp ../../models/digits/digits.onnx .
SHAPES="image:[16,1,8,8]"

# 1. What there is to tune: one task per distinct conv2d/dense workload.
run kiln tasks digits.onnx --input-shapes "$SHAPES"

# 2. One task: the matmul of the first dense layer, 8 configs of its knobs
#    tile_y, tile_x and tile_k, measured by the random tuner.
run kiln tune digits.onnx --input-shapes "$SHAPES" -o digits_records.json --tasks 3 \
  --trials 8 --tuner random --seed 4
echo "\$ head -n 1 digits_records.json"
head -n 1 digits_records.json

# 3. The whole model: every task, 4 trials each (task 2 already has 8).
run kiln tune digits.onnx --input-shapes "$SHAPES" -o digits_records.json \
  --trials 4 --tuner random --seed 4
run kiln records digits_records.json

# 4. Compile without records (the fallback warnings), then with them.
run kiln compile digits.onnx --input-shapes "$SHAPES" -o digits_fallback.so --no-shipped-records
run kiln compile digits.onnx --input-shapes "$SHAPES" -o digits_tuned.so --tuning-records digits_records.json
