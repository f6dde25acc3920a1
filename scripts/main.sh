#!/usr/bin/env bash
# The main job: a local TubeMQ cluster, a pipeline through it, and the cluster stopped.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
# shellcheck disable=SC1091
source .venv/bin/activate
python examples/pipeline.py "$@"
