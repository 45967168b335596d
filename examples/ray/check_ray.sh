#!/usr/bin/env bash
# Run mmnp's Ray tests (tests/test_ray.py: `mmnp generate --executor ray` on a local Ray instance gives
# the bytes of a local run, alone and mixed with --shard parts) in a throwaway venv.
#
# Why not in the main environment: Ray is a large install (~200 MB with its dependencies) that only
# `--executor ray` needs; mmnp imports it lazily, so neither the main install nor the main test venv has it.
# The venv gets Ray and sees everything else from the calling environment through a .pth file:
#
#   examples/ray/check_ray.sh                       # from an env with mmnp[test] (e.g. .venv/bin/python)
#   PYTHON=.venv/bin/python examples/ray/check_ray.sh
#
# The calling environment and the layering: examples/throwaway_venv.sh. When the caller lacks mmnp and
# pytest, the venv installs them itself. RAY_VENV=DIR keeps the venv in DIR. About 1 minute layered.
set -euo pipefail
cd "$(dirname "$0")/../.."
source examples/throwaway_venv.sh
standalone() {
  "$VENV/bin/pip" install -q -e '.[test]'
}
throwaway_venv ray "${RAY_VENV:-}" "mmnp, pytest" "mmnp[test]" standalone
"$VENV/bin/pip" install -q --no-warn-conflicts 'ray==2.60.0'
venv_tests ray tests/test_ray.py
