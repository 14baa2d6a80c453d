#!/usr/bin/env bash
# Download the wheels scripts/gpu_check.sh needs on the GPU machine into .whl/ (git-ignored).
#
# The device image (nvidia-h100-x1, nvidia-h200: Python 3.12, torch 2.11 CUDA 13) has
# click, rich, numpy, matplotlib, pathspec, pyyaml and typing-extensions, but not libcst,
# and nothing can be downloaded there. libcst is the one package the CLI imports that the
# image lacks (pyyaml, its only need on 3.12, is in the image; watchfiles is only for
# `check --watch`). The version is the one installed here, so the GPU runs the parser the
# tests ran. Run this where pip can reach the index:
#   PYTHON=/path/to/venv/bin/python bash scripts/gpu_wheels.sh [EXTRA_REQUIREMENT...]
# Extra requirements (e.g. pyyaml==6.0.2 for an image without it) are downloaded too.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
DEST=${PERFLINT_WHEELS:-.whl}
version=$("$PY" -c 'import importlib.metadata as m; print(m.version("libcst"))' 2>/dev/null || true)
mkdir -p "$DEST"
platforms=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64
           --platform manylinux2014_x86_64 --platform manylinux1_x86_64)
"$PY" -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp "${platforms[@]}" \
    -d "$DEST" "libcst${version:+==$version}" "$@"
echo "wheels in $DEST:"
ls -1 "$DEST"
