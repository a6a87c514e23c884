#!/usr/bin/env bash
# Build Kiln from scratch and run every test: the C unit tests (also under
# AddressSanitizer + UndefinedBehaviorSanitizer), the fuzz targets of the ONNX
# importer and the file readers (libFuzzer, clang; tests/fuzz/run.sh: their
# regressions replayed, then a fixed run of each), the Python package tests,
# the documentation's tutorials (run and compared with their pages), the
# kiln command's tests, the end-to-end model tests (five torchvision models
# exported with seeded weights, matched against PyTorch), and ONNX's own
# node tests (conformance; any failing supported case fails the run), Debian's
# onnx 1.12 suite and the newest onnx release's (from PyPI, in the venv
# build/onnx-venv that tests/onnx/newest_suite.sh makes).
# Usage: bash tools/test.sh            (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=$(nproc 2>/dev/null || echo 2)
PY=/usr/bin/python3   # Debian's Python: numpy, pytest, torch, onnx from apt

echo "== build (release, -Werror)"
cmake -S . -B build -DKILN_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$JOBS"
# the benchmarks (bench/) call the templates' helpers directly: they must
# build too, though no test runs them
cmake --build build -j"$JOBS" --target benchmarks >/dev/null

echo "== unit tests"
(cd build && ctest --output-on-failure)

echo "== unit tests under ASan + UBSan"
cmake -S . -B build-asan -DKILN_WERROR=ON -DKILN_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build-asan -j"$JOBS" --target kiln_unit
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 KILN_ROOT="$PWD" ./build-asan/kiln_unit

# libFuzzer + ASan/UBSan (clang): the ONNX importer and each file reader
# (tuning records, .npy/.npz, graph JSON, params): every past finding
# replayed, then a fixed number of inputs each (about 10 s a target) from
# the committed seed corpora with the fixed seed (KILN_FUZZ_SEED, default 1)
# and address-space randomisation off: the same inputs on every run, so the
# result changes only with the code (tests/fuzz/run.sh, "ci").
echo "== fuzz targets (tests/fuzz: 5 targets, their regression inputs, then a fixed run of each)"
cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DKILN_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz -j"$JOBS" --target fuzz_targets >/dev/null
bash tests/fuzz/run.sh build-fuzz 60 ci

echo "== python package tests"
KILN_LIBRARY_PATH="$PWD/build" "$PY" -m pytest -q tests/python

# The documentation (docs/): every tutorial script runs and prints what its
# page shows, the C examples build and run, docs/cli.md matches --help.
echo "== documentation tests"
KILN_LIBRARY_PATH="$PWD/build" "$PY" -m pytest -q tests/docs

# onnxruntime (build/ort-venv): the int8 models' quantization, and the
# run-time Loop compared with it (tests/cli/test_runtime_loop.py)
bash tests/models/ort_venv.sh

echo "== kiln command tests"
KILN_LIBRARY_PATH="$PWD/build" "$PY" -m pytest -q tests/cli

echo "== model tests (torchvision models vs PyTorch, the bundled digits model, int8 models vs ONNX Runtime)"
KILN_LIBRARY_PATH="$PWD/build" "$PY" -m pytest -q tests/models

echo "== ONNX frontend tests and ONNX conformance (node + simple cases; report: build/onnx_conformance.md)"
bash tests/onnx/newest_suite.sh --setup   # the newest onnx (version_converter) for tests/onnx
KILN_BUILD_DIR="$PWD/build" "$PY" -m pytest -q tests/onnx
"$PY" tests/onnx/run_conformance.py --kiln build/kiln -j "$JOBS"

echo "== ONNX conformance, the newest onnx release's node cases (report: build/onnx_conformance_newest.md)"
bash tests/onnx/newest_suite.sh --kiln build/kiln -j "$JOBS"

echo "== all tests passed"
