#!/usr/bin/env bash
# Tutorial 7: read a profile - each row's kernel, its tuning task and where
# its config came from.  Run from the repository root after building:
#     PATH="$PWD/build:$PATH" bash docs/tutorials/07_profile.sh
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
rm -f profile_records.json
cp ../../models/digits/digits.onnx .
SHAPES="image:[16,1,8,8]"

# Tune one task a little (the last dense layer), so that one kernel has a
# tuned config and the others the fallback.
run kiln tune digits.onnx --input-shapes "$SHAPES" -o profile_records.json --tasks 4 \
  --trials 4 --tuner random --seed 4
run kiln compile digits.onnx --input-shapes "$SHAPES" -o digits_profile.so \
  --tuning-records profile_records.json --quiet-fallback

# The profile: one row per kernel, sorted by time.
run kiln run digits_profile.so --profile --repeat 20 --number 10

# The tasks, with the kernels ("used by") that each one schedules.
run kiln tasks digits.onnx --input-shapes "$SHAPES"
