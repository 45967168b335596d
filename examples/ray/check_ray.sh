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
# The calling environment is the interpreter named by $PYTHON, else the active virtualenv's python,
# else python3. When it lacks mmnp and pytest, the venv installs them itself. About 1 minute layered.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-${VIRTUAL_ENV:+$VIRTUAL_ENV/bin/python}}
PY=${PY:-python3}
if [ -n "${RAY_VENV:-}" ]; then VENV=$RAY_VENV; else
  VENV=$(mktemp -d /tmp/mmnp-ray-venv.XXXXXX); trap 'rm -rf "$VENV"' EXIT  # ours: removed when done
fi
start=$SECONDS
"$PY" -m venv "$VENV"
site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
if "$PY" -c 'import mmnp, pytest' 2>/dev/null; then
  # layered: the caller's packages (and its editable mmnp) come after the venv's own
  caller=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "import site; site.addsitedir('$caller')" > "$site/zz-mmnp-caller.pth"
  echo "ray venv $VENV: layered over $caller"
else
  echo "ray venv $VENV: standalone (the calling python lacks mmnp[test])"
  "$VENV/bin/pip" install -q -e '.[test]'
fi
"$VENV/bin/pip" install -q --no-warn-conflicts 'ray==2.60.0'
echo "ray venv ready in $((SECONDS - start)) s"
"$VENV/bin/python" -m pytest -q tests/test_ray.py -p no:cacheprovider -rs
