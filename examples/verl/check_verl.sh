#!/usr/bin/env bash
# Run mmnp's verl tests against verl itself, in a throwaway venv beside your mmnp environment.
#
# Why not in CI: `pip install verl` (0.9.1) replaces transformers (5.24 -> 5.10.4) and pulls
# ray, wandb and opentelemetry. The dataset class and reward loader only need verl's Python
# code plus a few light dependencies, so this installs those without touching your packages:
#
#   examples/verl/check_verl.sh            # from the repository root, in an env with mmnp[test,train,vision,hf]
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
VENV=${VERL_VENV:-/tmp/mmnp-verl-venv}
"$PY" -m venv --system-site-packages "$VENV"
"$VENV/bin/pip" install -q --no-deps verl==0.9.1 ray==2.60.0 msgpack omegaconf==2.3.1 \
    antlr4-python3-runtime==4.9.3 hydra-core==1.3.8 codetiming tensordict==0.10.0 pyvers
"$VENV/bin/pip" install -q --no-deps -e .
"$VENV/bin/python" -m pytest -q tests/test_verl.py -p no:cacheprovider -rs
