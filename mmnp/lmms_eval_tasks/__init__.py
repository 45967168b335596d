"""lmms-eval tasks for MM-NP-Bench's image modality, scored by mmnp's verifiers.

    mmnp export --data DATA --format hf --split-by task --out mmnp-export
    lmms-eval --include_path "$(python -m mmnp.lmms_eval_tasks)" --tasks mmnp_image --model ...

lmms-eval reads a task's data only through `datasets.load_dataset(dataset_path)` and its YAML
has no runtime parameter for the path, so the tasks read `mmnp-export` in the folder where
lmms-eval runs (a split per task); to read another folder, copy this folder and change
`dataset_path` in `_template_yaml`. Each row's instance is checked against its content hash.
"""

from pathlib import Path

PATH = Path(__file__).parent
