#!/usr/bin/env bash
# Run mmnp's verl tests (tests/test_verl.py) against verl itself, on CPU, in a throwaway venv.
#
# Why not in the main environment: `pip install verl` (0.9.1) replaces transformers (5.24 -> 5.10.4)
# and pulls ray, wandb and opentelemetry. What the tests use (verl's dataset class, reward loader and
# the policy-loss / advantage registries) needs only verl's Python code and a few light packages, so
# the venv gets those with --no-deps and sees everything else from the calling environment:
#
#   examples/verl/check_verl.sh                      # from an env with mmnp[test,train,hf] (e.g. .venv/bin/python)
#   PYTHON=.venv/bin/python examples/verl/check_verl.sh
#
# The calling environment is the interpreter named by $PYTHON, else the active virtualenv's python,
# else python3. When it lacks mmnp's test and train extras, the venv installs them itself (CPU torch:
# torch==2.13.0 from this machine's wheel store; elsewhere set TORCH_INDEX to PyTorch's CPU index,
# https://download.pytorch.org/whl/cpu). About 1 minute layered, 3-4 minutes standalone.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-${VIRTUAL_ENV:+$VIRTUAL_ENV/bin/python}}
PY=${PY:-python3}
if [ -n "${VERL_VENV:-}" ]; then VENV=$VERL_VENV; else
  VENV=$(mktemp -d /tmp/mmnp-verl-venv.XXXXXX); trap 'rm -rf "$VENV"' EXIT  # ours: removed when done
fi
start=$SECONDS
"$PY" -m venv "$VENV"
site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
if "$PY" -c 'import mmnp, torch, transformers, pytest, datasets' 2>/dev/null; then
  # layered: the caller's packages (and its editable mmnp) come after the venv's own
  caller=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "import site; site.addsitedir('$caller')" > "$site/zz-mmnp-caller.pth"
  echo "verl venv $VENV: layered over $caller"
else
  echo "verl venv $VENV: standalone (the calling python lacks mmnp[test,train,hf])"
  "$VENV/bin/pip" install -q torch==2.13.0 ${TORCH_INDEX:+--index-url "$TORCH_INDEX"}
  "$VENV/bin/pip" install -q -e '.[test,train,hf]'
fi
"$VENV/bin/pip" install -q --no-deps --no-warn-conflicts verl==0.9.1 ray==2.60.0 tensordict==0.10.0 omegaconf==2.3.1 \
    antlr4-python3-runtime==4.9.3 hydra-core==1.3.8
"$VENV/bin/pip" install -q --no-warn-conflicts msgpack codetiming 'pyvers<0.2' requests jsonschema cloudpickle orjson  # light, no torch
echo "verl venv ready in $((SECONDS - start)) s"
"$VENV/bin/python" -m pytest -q tests/test_verl.py -p no:cacheprovider -rs
