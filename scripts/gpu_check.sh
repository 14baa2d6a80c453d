#!/usr/bin/env bash
# The whole device check as one command, run from the repository root:
#
#   OUT=DIR bash scripts/gpu_check.sh [--device cuda|cpu] [--quick] [--deps-only]
#
# 1. makes the CLI importable: what the interpreter lacks (libcst on the GPU image) is
#    installed from the wheels in .whl/ (scripts/gpu_wheels.sh fetches them; the device
#    tool carries the git-ignored folder) with `pip install --no-index --no-deps --target`
#    and PYTHONPATH; no network is needed;
# 2. prints the machine (GPU model, driver, torch, CUDA and cuDNN versions);
# 3. `pytorch-perflint bench --device DEVICE` over every rule's scenario;
# 4. `pytorch-perflint bench SCRIPT` on the bundled examples (a script picks its own device:
#    the GPU ones use CUDA when there is one; --device cpu hides the GPU from them);
# 5. writes under $OUT: machine.txt, bench.json, bench.png, bench.log, script-NAME.json,
#    .png and .log per example, and summary.md (printed at the end).
#
# Sizes and rounds are chosen so that --device cuda ends within 8 minutes on one H100 or
# H200 (PERFLINT_CHECK_BUDGET_S, default 460 s, bounds it: the scenarios get what is left
# after 120 s per example, each example an even share of the rest; a step that would start
# with too little time left is skipped and the summary says so). --quick: quick sizes, 2 rounds,
# tiny script runs (the test runs it this way on a CPU). PERFLINT_CHECK_RULES="TPF204 ..."
# limits the scenarios, PERFLINT_CHECK_EXAMPLES="train_cifar.py ..." the scripts.
# --deps-only: step 1 alone (PERFLINT_CHECK_NEEDS overrides the modules it requires).
# Exit status: 0 every step ran and every check held; 1 a check failed or a step did not
# finish; 2 the machine cannot run the check (no CUDA for --device cuda, packages missing).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

DEVICE=cuda
QUICK=0
DEPS_ONLY=0
while [ $# -gt 0 ]; do
    case "$1" in
        --device) DEVICE=${2:-}; shift 2 ;;
        --device=*) DEVICE=${1#--device=}; shift ;;
        --quick) QUICK=1; shift ;;
        --deps-only) DEPS_ONLY=1; shift ;;
        -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "error: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
case "$DEVICE" in cuda|cpu) ;; *) echo "error: --device must be cuda or cpu, not '$DEVICE'" >&2; exit 2 ;; esac

OUT=${OUT:-gpu-check-out}
mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)
PY=${PYTHON:-python3}
WHEELS=${PERFLINT_WHEELS:-.whl}
BUDGET=${PERFLINT_CHECK_BUDGET_S:-460}
export PYTHONUNBUFFERED=1
STARTED=$(date +%s)
left() { echo $((BUDGET - ($(date +%s) - STARTED))); }
status=0

# -- 1. packages ------------------------------------------------------------------------------
NEEDED=${PERFLINT_CHECK_NEEDS:-libcst click rich pathspec yaml torch numpy matplotlib}
missing() {
    "$PY" -c 'import importlib.util, sys; print(" ".join(n for n in sys.argv[1:] if importlib.util.find_spec(n) is None))' $NEEDED
}
lacking=$(missing)
if [ -n "$lacking" ] && compgen -G "$WHEELS/*.whl" >/dev/null; then
    SITE=${PERFLINT_SITE:-$(mktemp -d "${TMPDIR:-/tmp}/perflint-site.XXXXXX")}
    echo "installing from $WHEELS into $SITE (missing: $lacking)"
    if ! "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "$WHEELS"/*.whl; then
        echo "error: pip could not install the wheels in $WHEELS" >&2
        exit 2
    fi
    export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
    lacking=$(missing)
fi
if [ -n "$lacking" ]; then
    echo "error: missing Python packages: $lacking. Run scripts/gpu_wheels.sh where pip reaches the index and carry $WHEELS" >&2
    exit 2
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"  # this checkout's pytorch_perflint first
if [ "$DEPS_ONLY" = 1 ]; then
    "$PY" -c 'import importlib, sys
for name in sys.argv[1:]:
    print(name + ": " + str(getattr(importlib.import_module(name), "__file__", None)))' $NEEDED || exit 2
    exit 0
fi

# -- 2. the machine ---------------------------------------------------------------------------
{
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); device asked: $DEVICE; quick: $QUICK"
    if command -v nvidia-smi >/dev/null 2>&1; then
        nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | sed 's/^/gpu (nvidia-smi): /'
    else
        echo "gpu (nvidia-smi): none found"
    fi
    "$PY" - <<'PY'
import os, platform
import torch
print(f"python {platform.python_version()}, torch {torch.__version__}, CUDA (torch build) {torch.version.cuda}, "
      f"cuDNN {torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None}")
print(f"cuda available: {torch.cuda.is_available()}, devices: {torch.cuda.device_count()}")
for index in range(torch.cuda.device_count()):
    p = torch.cuda.get_device_properties(index)
    print(f"  cuda:{index} {p.name}, {p.total_memory / 2**30:.0f} GiB, compute capability {p.major}.{p.minor}")
print(f"cpu: {os.cpu_count()} cores, {platform.platform()}")
PY
} 2>&1 | tee "$OUT/machine.txt"
if [ "$DEVICE" = cuda ] && ! grep -q '^cuda available: True' "$OUT/machine.txt"; then
    echo "error: --device cuda but torch sees no CUDA device here (use --device cpu to run the same steps on the CPU)" >&2
    exit 2
fi

# -- 3. every rule's scenario -----------------------------------------------------------------
# The budget's split, from the first H200 run (docs/benchmarks/README.md, "The device check"):
# the 20 scenarios at their "cuda" sizes take about 180 s with --rounds 5 --min-run-time 0.2;
# a `bench SCRIPT` run is a fresh process (about 12 s each on the H200: interpreter, torch,
# CUDA context), 9 runs with --rounds 2, so each example keeps about 120 s back.
if [ "$DEVICE" = cuda ]; then
    default_examples="train_gpu_ready.py train_cifar.py"
else
    default_examples="train_anomaly_left_on.py"
fi
examples=(${PERFLINT_CHECK_EXAMPLES:-$default_examples})
if [ "$QUICK" = 1 ]; then
    bench_args=(--quick --rounds 2 --min-run-time 0.01)
    per_example=15
else
    bench_args=(--rounds 5 --min-run-time 0.2)
    per_example=120
fi
for code in ${PERFLINT_CHECK_RULES:-}; do bench_args+=(--rule "$code"); done
scenario_limit=$(( $(left) - 10 - per_example * ${#examples[@]} ))  # what the scripts need is kept back
[ "$scenario_limit" -lt 60 ] && scenario_limit=60
echo
echo "== bench --device $DEVICE (${scenario_limit} s at most)"
# On `timeout`'s SIGTERM bench writes the JSON and chart of the scenarios that finished (it
# rewrites the JSON after each one, so even the SIGKILL 10 s later loses none of them).
timeout --kill-after=10 "$scenario_limit" "$PY" -m pytorch_perflint bench --device "$DEVICE" "${bench_args[@]}" \
    --json "$OUT/bench.json" --plot "$OUT/bench.png" 2>&1 | tee "$OUT/bench.log"
rc=${PIPESTATUS[0]}
[ "$rc" -ne 0 ] && status=1 && echo "bench ended with exit status $rc$([ "$rc" -eq 124 ] && echo " (stopped at its ${scenario_limit} s limit)")" | tee -a "$OUT/bench.log"

# -- 4. bench SCRIPT on the examples ----------------------------------------------------------
remaining=${#examples[@]}
for example in "${examples[@]}"; do
    stem=${example%.py}
    if [ "$QUICK" = 1 ]; then
        script_args=(--steps 2 --warmup 1 --rounds 1 --no-per-rule)
    else
        script_args=(--steps 20 --warmup 5 --rounds 2 --no-per-rule)
    fi
    own_args=()  # the script's own arguments, after `--` (--quick: a small dataset and model)
    [ "$QUICK" = 1 ] && own_args=(-- --items 256)
    case "$example" in
        evaluate.py) script_args+=(--unit forward) ;;
        train_anomaly_left_on.py) [ "$QUICK" = 1 ] && own_args+=(--depth 2) ;;
        # 512 images in batches of 64 for 2 epochs: 16 optimizer steps in all, no arguments
        train_cifar.py) own_args=(); [ "$QUICK" = 1 ] || script_args=(--steps 10 --warmup 4 --rounds 2 --no-per-rule) ;;
    esac
    # An even share of what is left, so the first example cannot starve the next; time it
    # does not use goes to those after it.
    limit=$(( ($(left) - 10) / remaining ))
    remaining=$((remaining - 1))
    echo
    if [ "$limit" -lt 30 ]; then
        echo "== bench $example: skipped, ${limit} s left for it of the ${BUDGET} s budget" | tee "$OUT/script-$stem.log"
        status=1
        continue
    fi
    echo "== bench examples/$example (${limit} s at most)"
    if [ "$DEVICE" = cpu ]; then hide=(env CUDA_VISIBLE_DEVICES=); else hide=(); fi
    # SIGTERM in the measured rounds: bench SCRIPT writes what the finished rounds measured.
    timeout --kill-after=10 "$limit" "${hide[@]}" "$PY" -m pytorch_perflint bench "examples/$example" --unsafe-fixes "${script_args[@]}" \
        --json "$OUT/script-$stem.json" --plot "$OUT/script-$stem.png" "${own_args[@]}" 2>&1 | tee "$OUT/script-$stem.log"
    rc=${PIPESTATUS[0]}
    [ "$rc" -ne 0 ] && status=1 && echo "bench $example ended with exit status $rc" | tee -a "$OUT/script-$stem.log"
done

# -- 5. the summary ---------------------------------------------------------------------------
echo
"$PY" -m pytorch_perflint.bench.summary "$OUT" > "$OUT/summary.md" || status=1
cat "$OUT/summary.md"
echo "device check done in $(( $(date +%s) - STARTED )) s; files in $OUT; exit status $status"
exit "$status"
