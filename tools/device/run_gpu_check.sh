#!/usr/bin/env bash
# The GPU check on a node without network, in one command (tools/device/README.md):
#
#   bash tools/device/run_gpu_check.sh [benchmarks/gpu_check.py options]
#
# Needs the tree and .device-wheels/ (tools/device/fetch_wheels.sh) beside it, and a Python (3.12)
# that has torch, transformers and sentence-transformers. Installs the carried wheels the node
# lacks into a temporary folder on PYTHONPATH (never over the node's own packages), then runs
# benchmarks/gpu_check.py under a time limit (GPU_CHECK_LIMIT_S, 510 s). Its lines go to the
# console and, with the log and the JSON, to $OUT (default: a new temporary folder, printed).
# Exit status: the check's (1 on a FAIL; 124 when the time limit ended it).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
# The node's Python: $PYTHON, else the first of python3 / python that has torch.
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
    for candidate in python3 python; do
        if "$candidate" -c "import torch" 2>/dev/null; then PY="$candidate"; break; fi
    done
    PY="${PY:-python3}"
fi
WHEELS="${RR_DEVICE_WHEELS:-$ROOT/.device-wheels}"
LIMIT_S="${GPU_CHECK_LIMIT_S:-510}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/rr-gpu-check.XXXXXX")"
REPORT="${OUT:-$WORK/report}"
SITE="$WORK/site"
mkdir -p "$REPORT"

echo "run_gpu_check: $("$PY" --version 2>&1) ($(command -v "$PY")), tree $ROOT, wheels $WHEELS, report $REPORT"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader

t0=$SECONDS
if "$PY" tools/device/install_wheels.py install "$WHEELS" "$SITE" --root "$ROOT"; then
    export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
else
    echo "run_gpu_check: the wheels did not install; trying with what the node has"
fi
if [ "$(cat "$SITE/rr-source" 2>/dev/null)" != "wheel" ]; then
    # rr from the tree: its configs from conf/ (rr/conf is a link, which a copy may not keep)
    export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$ROOT"
    export RR_CONFIG_DIR="$ROOT/conf"
fi
echo "run_gpu_check: installed in $((SECONDS - t0)) s; PYTHONPATH=$PYTHONPATH"
(cd "$WORK" && "$PY" -c "import rr, hydra, torch; print('run_gpu_check: rr from', rr.__file__, '| torch', torch.__version__, '| cuda', torch.cuda.is_available())")

# The check stops starting checks 60 s before the limit (--budget-s); the limit kills it in any case.
timeout --kill-after=20 "$LIMIT_S" "$PY" benchmarks/gpu_check.py --out "$WORK/check" \
    --budget-s $((LIMIT_S - 60)) "$@" 2>"$REPORT/gpu_check.stderr" | tee "$REPORT/gpu_check.txt"
rc=${PIPESTATUS[0]}
[ "$rc" = 124 ] && echo "run_gpu_check: stopped by the ${LIMIT_S} s limit"
cp "$WORK/check/gpu_check.json" "$WORK/check/gpu_check.log" "$REPORT/" 2>/dev/null
tail -n 20 "$REPORT/gpu_check.stderr" | sed 's/^/stderr: /'
echo "run_gpu_check: exit $rc after $((SECONDS - t0)) s"
exit "$rc"
