#!/usr/bin/env bash
# Run Kiln's libFuzzer targets (built with -DKILN_FUZZ=ON, see
# CMakeLists.txt): first every input of tests/fuzz/regressions/TARGET once
# (each a crash a fuzzer once found, or a model that once reached undefined
# behaviour, kept so it stays fixed), then fuzz each target from its
# committed seed corpus tests/fuzz/corpus/TARGET (new inputs go to a scratch
# copy, so the repository is not touched).  Any crash, leak, sanitizer
# report or timeout fails the run; the input that caused it is saved under
# BUILD/fuzz-artifacts/ to be added to tests/fuzz/regressions/TARGET.
#
# Two kinds of run:
#   RUNS "ci" (what tools/test.sh, and so CI, does): each target executes a
#     fixed number of inputs (the table below, about 10 s each on two busy
#     cores) with the fixed seed and address-space randomisation off, so
#     every run makes the same inputs and a CI result does not depend on
#     the machine's speed or on chance: it changes only when the code
#     does.  SECONDS caps each target all the same (a slow machine then
#     runs a prefix of the same inputs).
#   RUNS a number, or 0 (SECONDS only): an exploratory run; fuzz for
#     minutes (SECONDS 300) with other KILN_FUZZ_SEEDs when changing a
#     reader or the importer, and add what it finds, with the fix, to
#     tests/fuzz/regressions/TARGET/.
# SECONDS 0 replays the regressions and the committed corpus only.
# The importer's corpus holds, besides hand-made models, one model per
# operator from ONNX's node tests with its small inputs made constants
# (const_*.onnx, written by tests/fuzz/make_onnx_seeds.py), so the fuzzer
# starts past the "must be known at compile time" checks.
# The seed is KILN_FUZZ_SEED (default 1).
# Usage: bash tests/fuzz/run.sh BUILD-DIR [SECONDS-PER-TARGET] [RUNS|ci]
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:?usage: tests/fuzz/run.sh BUILD-DIR [SECONDS]}"
secs="${2:-25}"
runs="${3:-0}"
targets=(onnx records npy graph_json params)
# inputs per target in a "ci" run (the readers differ ~20x in speed)
declare -A ci_runs=([onnx]=40000 [records]=4000 [npy]=10000 [graph_json]=15000 [params]=60000)
# address-space randomisation off where the system allows it: the importer's
# maps are keyed by pointers, so with it on, coverage (and so the inputs
# libFuzzer keeps and mutates) differs from run to run.  -reload=0 below:
# libFuzzer otherwise rereads its corpus folder every second, which makes
# the inputs depend on the machine's speed.
norand=()
if [ "$runs" = ci ]; then
  if setarch "$(uname -m)" -R true 2>/dev/null; then norand=(setarch "$(uname -m)" -R)
  else echo "fuzz: cannot turn address-space randomisation off (setarch -R): the inputs may differ between runs" >&2; fi
fi
# allocator_may_return_null: an absurd allocation fails as malloc does
# (the code must then report an error), instead of ASan aborting
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:allocator_may_return_null=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
mkdir -p "$build/fuzz-artifacts"
for t in "${targets[@]}"; do
  bin="$build/fuzz_$t"
  [ -x "$bin" ] || { echo "fuzz: $bin is missing (configure with -DKILN_FUZZ=ON, build fuzz_targets)" >&2; exit 1; }
  if compgen -G "tests/fuzz/regressions/$t/*" >/dev/null; then
    echo "fuzz: $t: regression inputs"
    "$bin" -runs=1 tests/fuzz/regressions/"$t"/* 2>"$build/fuzz-artifacts/$t.regressions.log" ||
      { tail -n 40 "$build/fuzz-artifacts/$t.regressions.log" >&2; exit 1; }
  fi
  if [ "$secs" = 0 ]; then
    # replay only: every committed corpus input once, no new inputs
    echo "fuzz: $t: corpus inputs"
    "$bin" -runs=1 -rss_limit_mb=2048 tests/fuzz/corpus/"$t"/* 2>"$build/fuzz-artifacts/$t.corpus.log" ||
      { tail -n 40 "$build/fuzz-artifacts/$t.corpus.log" >&2; exit 1; }
    continue
  fi
  scratch="$build/fuzz-corpus/$t"
  rm -rf "$scratch"
  mkdir -p "$scratch"
  n="$runs"
  [ "$runs" = ci ] && n="${ci_runs[$t]}"
  echo "fuzz: $t: $([ "$n" -gt 0 ] && echo "$n inputs, at most ")${secs} s from tests/fuzz/corpus/$t"
  if ! "${norand[@]}" "$bin" -seed="${KILN_FUZZ_SEED:-1}" -runs="$((n > 0 ? n : -1))" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 -max_len=65536 -reload=0 -print_final_stats=1 \
      -artifact_prefix="$build/fuzz-artifacts/$t-" "$scratch" "tests/fuzz/corpus/$t" \
      2>"$build/fuzz-artifacts/$t.log"; then
    tail -n 60 "$build/fuzz-artifacts/$t.log" >&2
    echo "fuzz: $t found a problem; the input is in $build/fuzz-artifacts/ (add it to tests/fuzz/regressions/$t/)" >&2
    exit 1
  fi
  grep -E '^stat::number_of_executed_units|^stat::new_units_added' "$build/fuzz-artifacts/$t.log" | tr '\n' ' '
  echo
done
echo "fuzz: no findings"
