#!/usr/bin/env bash
# Build Kiln, compile the bundled digits model (a small CNN trained on
# scikit-learn's handwritten digits) and run it on 16 held-out images:
# its predictions, the true labels, the accuracy and the run time.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="$(nproc 2>/dev/null || echo 2)"
echo "quickstart: building Kiln with $jobs jobs (about a minute on 2 cores)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
# cmake's own progress, on one line: "[ 42%]"
cmake --build build -j"$jobs" | { grep --line-buffered -o '^\[ *[0-9]*%\]' || true; } |
  while read -r pct; do printf '\rquickstart: building Kiln %s' "$pct"; done
echo
./build/kiln --version
echo "quickstart: compiling models/digits/digits.onnx for a batch of 16 (tuned configs from records/)"
./build/kiln compile models/digits/digits.onnx -o build/digits.so --input-shapes "image:[16,1,8,8]"
out="$(./build/kiln run build/digits.so --inputs models/digits/sample16.npz --print-top 1 --print-time --repeat 50 --number 10)"
echo "$out"
labels="$(cat models/digits/sample16_labels.txt)"
echo "true labels:       $labels"
predicted="$(echo "$out" | sed -n 's/^predicted classes: *//p')"
read -r -a p <<<"$predicted"
read -r -a t <<<"$labels"
right=0
for i in "${!t[@]}"; do [[ "${p[$i]:-}" == "${t[$i]}" ]] && right=$((right + 1)); done
echo "accuracy:          $right/${#t[@]} correct ($((100 * right / ${#t[@]}))%)"
