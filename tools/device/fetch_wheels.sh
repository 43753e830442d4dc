#!/usr/bin/env bash
# Fetch the wheels of tools/device/wheels.txt for a GPU node without network, and build rr's own.
#
#   bash tools/device/fetch_wheels.sh [PYTHON_VERSION] [DEST]     # defaults: 3.12 .device-wheels
#
# Downloads each listed wheel for CPython PYTHON_VERSION on manylinux x86_64 (no dependencies: the
# list is exact), builds the [sdist] lines into wheels, builds rr's wheel from this tree and stamps
# it with the tree's hash (tools/device/install_wheels.py installs it only when the tree that
# travels is the same), then prints the sizes. Run it again after changing rr: the stamp tells
# run_gpu_check.sh whether the wheel is current (if not, rr runs from the tree).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PYVER="${1:-3.12}"
DEST="${2:-$ROOT/.device-wheels}"
LIST="$ROOT/tools/device/wheels.txt"
if [ -x "$ROOT/.venv/bin/python" ]; then PY="$ROOT/.venv/bin/python"; else PY="${PYTHON:-python3}"; fi

rm -rf "$DEST"
mkdir -p "$DEST"
binary=()
sdist=()
while IFS= read -r line; do
    req="${line%%#*}"
    req="$(echo "$req" | xargs)"
    [ -z "$req" ] && continue
    if [[ "$line" == *"[sdist]"* ]]; then sdist+=("$req"); else binary+=("$req"); fi
done <"$LIST"

echo "fetch_wheels: ${#binary[@]} wheels for cp${PYVER/./} manylinux x86_64 into $DEST"
"$PY" -m pip download -q --no-deps --only-binary=:all: \
    --python-version "$PYVER" --implementation cp \
    --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
    -d "$DEST" "${binary[@]}"
if [ "${#sdist[@]}" -gt 0 ]; then
    echo "fetch_wheels: building ${sdist[*]} (source only on PyPI) into pure-Python wheels"
    "$PY" -m pip wheel -q --no-deps -w "$DEST" "${sdist[@]}"
fi

# rr's wheel, from a clean copy of what it is built from (no __pycache__, no egg-info), offline,
# with this environment's setuptools (as tests/test_plugins.py builds it).
SRC="$(mktemp -d)"
trap 'rm -rf "$SRC"' EXIT
"$PY" - "$ROOT" "$SRC/rr-src" <<'EOF'
import shutil, sys
from pathlib import Path
root, src = Path(sys.argv[1]), Path(sys.argv[2])
ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
for part in ("rr", "hydra_plugins"):
    shutil.copytree(root / part, src / part, ignore=ignore)  # follows the rr/conf link
for name in ("pyproject.toml", "README.md"):
    shutil.copy(root / name, src / name)
EOF
echo "fetch_wheels: building rr's wheel"
"$PY" -m pip wheel -q --no-deps --no-index --no-build-isolation -w "$DEST" "$SRC/rr-src"
"$PY" "$ROOT/tools/device/install_wheels.py" tree-hash "$ROOT" >"$DEST/rr-tree.sha256"

for want in "${binary[@]}" "${sdist[@]}"; do
    name="$(echo "${want%%==*}" | tr 'A-Z_.' 'a-z--')"
    ls "$DEST" | tr 'A-Z_.' 'a-z--' | grep -q "^${name}-" || { echo "fetch_wheels: missing $want" >&2; exit 1; }
done
ls -l "$DEST"
wheels_kib="$(du -sk "$DEST" | cut -f1)"
tree_kib="$(cd "$ROOT" && { git ls-files -z; git ls-files -z --others --exclude-standard; } | xargs -0 du -ck 2>/dev/null | tail -1 | cut -f1)"
echo "fetch_wheels: wheels $((wheels_kib / 1024)) MiB ($wheels_kib KiB) + the tree that travels $((tree_kib / 1024)) MiB ($tree_kib KiB) = $(((wheels_kib + tree_kib) / 1024)) MiB of 64 MiB"
