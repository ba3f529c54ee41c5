#!/usr/bin/env bash
# kerneltui's GPU verification in one command, for a GPU machine where every minute counts.
#
# Steps run in the order given, each under its own time limit and logging to OUTDIR/<step>.log; a
# step that fails or runs out of time does not stop the next one (OUTDIR/summary.txt says how each
# ended). The bench scripts append to bench/RESULTS.md, which is copied to OUTDIR at the end.
#
# Usage: bench/gpu_all.sh OUTDIR STEP[=SECONDS] ...
#   env           GPU, driver, torch, triton, CuTe DSL, ncu versions
#   gpu-tests     tests/gpu except the timing and profile tests, and the cheat gallery on the GPU, several
#                 at once (correctness does not mind sharing)
#   bench-tests   the timing tests (tests/gpu/test_benchmark_gpu.py) and the GPU cheats (caught by the
#                 benchmark's side-work check: timing too), alone on the GPU
#   timing        bench/bench_timing.py --runs 5 (kerneltui vs do_bench vs ncu)
#   dump          bench/dump_examples.py (every example's compiler output on the GPU)
#   watch         bench/watch_latency.py on softmax (the GPU target; vector_add's is on the CPU)
#   check-speed   bench/engine_check.py on vector_add, then on vector_add with a host-side generate_input
#   breakdown     bench/check_breakdown.py --runs 3: each rung's time and the benchmark rung's parts, per check
#   sidework[:EXAMPLES]  bench/sidework_data.py: honest runs (default vector_add,softmax,matmul) for the
#                 side-work check's false alarms, taken in turns; it stops 30 s before the step's limit.
#                 SIDEWORK_ARGS adds arguments (e.g. "--gallery --cheats --runs 20")
#   kb-suite      bench/kernelbench_suite.py run --out scratch/kb_suite --runners local (carry scratch/kb_suite)
#   pytest:FILES  any further GPU test files, comma-separated, alone on the GPU
#   py:SCRIPT     any further bench script (with arguments separated by commas; so no argument can hold one)
#   set:VAR=VALUE  set VAR for the steps after it (the same step with a setting changed:
#                 breakdown set:KERNELTUI_SANDBOX_ZYGOTE_ON_GPU=true breakdown)
#
# What the steps took on an H100 (16 CPUs, 2026-12-06 10:32; bench/RESULTS.md): gpu-tests 164 s at GPU_TEST_WORKERS=12,
# bench-tests 113 s, timing 121 s (135-160 s in earlier calls), pytest:tests/gpu/test_profile_gpu.py 97 s. The three
# in one call, with a margin each: `GPU_TEST_WORKERS=12 bench/gpu_all.sh OUT env=8 gpu-tests=195 bench-tests=200
# timing=165` (409 s with the wheels' install). A pytest step whose summary is printed just before its limit is still
# marked rc=124 when the process takes longer than the seconds left to exit: read the summary line, not the rc.
set -uo pipefail
cd "$(dirname "$0")/.."
OUTDIR="$1"; shift
mkdir -p "$OUTDIR"
PY="${PYTHON:-python3}"
SUMMARY="$OUTDIR/summary.txt"
# Every test's outcome and failure, written as each ends (tests/conftest.py): a step cut off by its
# limit before pytest's own summary still says why each test failed.
export KERNELTUI_TEST_LOG="$OUTDIR/tests.log"
# Scripts print as they go: a step cut off by its limit keeps what it had printed.
export PYTHONUNBUFFERED=1

run_step() {  # name seconds command...
  local name="$1" limit="$2"; shift 2
  local safe="${name//[^A-Za-z0-9_.-]/_}"
  # Long pytest:/py: step names would make file names too long: keep a readable head and a hash.
  (( ${#safe} > 60 )) && safe="${safe:0:48}_$(printf '%s' "$name" | sha1sum | cut -c1-8)"
  local log="$OUTDIR/$safe.log"
  local start=$SECONDS
  echo "== $name (limit ${limit}s): $*" | tee -a "$SUMMARY"
  # SIGINT first, not SIGTERM: a Python script cut off by its limit then runs its `finally` blocks
  # (engine_check stops the engine it started in a folder of its own, which `engine stop --all`
  # cannot find and which would otherwise hold its warm workers through the next steps), and pytest
  # prints its summary with every failure's traceback. Whatever is still running 10 s later is killed.
  timeout --signal=INT --kill-after=10 "$limit" "$@" >"$log" 2>&1
  local rc=$?
  echo "   rc=$rc after $((SECONDS - start)) s; last line: $(tail -n 1 "$log")" | tee -a "$SUMMARY"
}

for spec in "$@"; do
  if [[ "$spec" == set:*=* ]]; then  # a variable for the steps after it
    export "${spec#set:}"
    echo "== set ${spec#set:} for the steps after this" | tee -a "$SUMMARY"
    continue
  fi
  # STEP=SECONDS: the limit is the number after the last '=' (a py: step's arguments may hold '=').
  step="$spec"
  limit=300
  if [[ "$spec" =~ ^(.*)=([0-9]+)$ ]]; then
    step="${BASH_REMATCH[1]}"
    limit="${BASH_REMATCH[2]}"
  fi
  case "$step" in
    env)
      run_step env "$limit" bash -c "nvidia-smi; $PY -c 'import torch, triton; print(torch.__version__, torch.version.cuda, triton.__version__, torch.cuda.get_device_name())'; $PY -c 'import cutlass; print(\"cutlass-dsl\", cutlass.__version__)' || true; (ncu --version || true)" ;;
    gpu-tests)
      # -v: one line per test as it ends, so a step cut off by its time limit still says what ran.
      # Eight test processes share the GPU: each benchmark's input pool, a quarter of the free memory
      # seen when it starts (up to 16 sets of 768 MiB for vector_add), would add up to more than the
      # device holds (CUDA C++ tests failed with "out of memory" at -n 8); a twentieth, 4 sets at most.
      KERNELTUI_BENCHMARK_POOL_FRACTION=0.05 KERNELTUI_BENCHMARK_MAX_POOL=4 \
      run_step gpu-tests "$limit" "$PY" -m pytest -m gpu -v -rA -p no:cacheprovider -n "${GPU_TEST_WORKERS:-4}" \
        --ignore=tests/gpu/test_benchmark_gpu.py --ignore=tests/gpu/test_profile_gpu.py tests/gpu \
        tests/cheats/test_gallery_gpu.py ;;
    bench-tests)
      run_step bench-tests "$limit" "$PY" -m pytest -m gpu -q -rA -p no:cacheprovider tests/gpu/test_benchmark_gpu.py \
        tests/cheats/test_cheats_gpu.py ;;
    timing)
      run_step timing "$limit" "$PY" bench/bench_timing.py --runs 5 ;;
    dump)
      run_step dump "$limit" "$PY" bench/dump_examples.py ;;
    watch)
      run_step watch-softmax "$limit" "$PY" bench/watch_latency.py --example softmax --saves 10 ;;
    check-speed)
      run_step check-speed "$limit" bash -c "$PY bench/engine_check.py --runs 5 && $PY bench/engine_check.py --runs 3 --slow-inputs" ;;
    breakdown)
      run_step breakdown "$limit" "$PY" bench/check_breakdown.py --runs 3 ;;
    sidework*)
      examples="${step#sidework}"; examples="${examples#:}"
      run_step "$step" "$limit" "$PY" bench/sidework_data.py --out "$OUTDIR/sidework" \
        --examples "${examples:-vector_add,softmax,matmul}" --runs 30 --max-seconds 1 \
        --deadline-seconds $((limit - 30)) --results bench/RESULTS.md ${SIDEWORK_ARGS:-} ;;
    kb-suite)
      run_step kb-suite "$limit" "$PY" bench/kernelbench_suite.py run --out scratch/kb_suite --runners local ;;
    pytest:*)
      files="${step#pytest:}"
      run_step "$step" "$limit" "$PY" -m pytest -m gpu -q -rA -p no:cacheprovider ${files//,/ } ;;
    py:*)
      args="${step#py:}"
      run_step "$step" "$limit" "$PY" ${args//,/ } ;;
    *)
      echo "unknown step: $step" | tee -a "$SUMMARY" ;;
  esac
done
cp bench/RESULTS.md "$OUTDIR/RESULTS.md"
