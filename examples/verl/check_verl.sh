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
# The calling environment and the layering: examples/throwaway_venv.sh. When the caller lacks mmnp's
# test and train extras, the venv installs them itself (CPU torch: torch==2.13.0 from this machine's
# wheel store; elsewhere set TORCH_INDEX to PyTorch's CPU index, https://download.pytorch.org/whl/cpu).
# VERL_VENV=DIR keeps the venv in DIR. About 1 minute layered, 3-4 minutes standalone.
set -euo pipefail
cd "$(dirname "$0")/../.."
source examples/throwaway_venv.sh
standalone() {
  "$VENV/bin/pip" install -q torch==2.13.0 ${TORCH_INDEX:+--index-url "$TORCH_INDEX"}
  "$VENV/bin/pip" install -q -e '.[test,train,hf]'
}
throwaway_venv verl "${VERL_VENV:-}" "mmnp, torch, transformers, pytest, datasets" "mmnp[test,train,hf]" standalone
"$VENV/bin/pip" install -q --no-deps --no-warn-conflicts verl==0.9.1 ray==2.60.0 tensordict==0.10.0 omegaconf==2.3.1 \
    antlr4-python3-runtime==4.9.3 hydra-core==1.3.8
"$VENV/bin/pip" install -q --no-warn-conflicts msgpack codetiming 'pyvers<0.2' requests jsonschema cloudpickle orjson  # light, no torch
venv_tests verl tests/test_verl.py
