#!/usr/bin/env bash
# Build Kiln, compile the bundled digits model (a small CNN trained on
# scikit-learn's handwritten digits) and run it on 16 held-out images:
# its predictions, the true labels, and the run time.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc 2>/dev/null || echo 2)" >/dev/null
./build/kiln --version
./build/kiln compile models/digits/digits.onnx -o build/digits.so --input-shapes "image:[16,1,8,8]"
./build/kiln run build/digits.so --inputs models/digits/sample16.npz --print-top 1 --print-time --repeat 50 --number 10
echo "true labels:       $(cat models/digits/sample16_labels.txt)"
