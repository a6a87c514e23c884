#!/usr/bin/env bash
# Run Kiln's libFuzzer targets (built with -DKILN_FUZZ=ON, see
# CMakeLists.txt): first every input of tests/fuzz/regressions/TARGET once
# (each a crash a fuzzer once found, kept so it stays fixed), then fuzz
# each target for SECONDS from its committed seed corpus
# tests/fuzz/corpus/TARGET (new inputs go to a scratch copy, so the
# repository is not touched).  Any crash, leak, sanitizer report or
# timeout fails the run; the input that caused it is saved under
# BUILD/fuzz-artifacts/ to be added to tests/fuzz/regressions/TARGET.
# The seed is fixed (KILN_FUZZ_SEED, default 1) so a run can be repeated.
# With RUNS, each target stops after that many inputs (or SECONDS, whichever
# comes first): with the fixed seed that is the same sequence of inputs on
# every machine, so the run CI makes is the run a developer repeats; leave
# RUNS out (or 0) for an exploratory run of SECONDS per target.
# SECONDS 0 replays the regressions and the committed corpus only.
# tools/test.sh (and so CI) fuzzes each target for 12 s with the fixed seed,
# after the replay; fuzz for minutes (SECONDS 300, other KILN_FUZZ_SEEDs)
# when changing a reader or the importer, and add what it finds to
# tests/fuzz/regressions/TARGET/ with the fix.
# Usage: bash tests/fuzz/run.sh BUILD-DIR [SECONDS-PER-TARGET] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:?usage: tests/fuzz/run.sh BUILD-DIR [SECONDS]}"
secs="${2:-25}"
runs="${3:-0}"
targets=(onnx records npy graph_json params)
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
  echo "fuzz: $t: ${secs} s$([ "$runs" -gt 0 ] && echo " or $runs inputs") from tests/fuzz/corpus/$t"
  if ! "$bin" -seed="${KILN_FUZZ_SEED:-1}" -runs="$((runs > 0 ? runs : -1))" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
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
