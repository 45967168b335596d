"""lm-evaluation-harness tasks for MM-NP-Bench (text modality), scored by mmnp's verifiers.

    lm_eval --include_path "$(python -m mmnp.lm_eval_tasks)" --tasks mmnp_text \\
        --metadata '{"data": "DATA"}' --apply_chat_template --model ...

`DATA` is a folder from `mmnp generate`, an `mmnp export --format hf|parquet` folder, or a Hub
dataset id of such an export. The group `mmnp_text` holds one task per mmnp task
(`mmnp_text_<task>`); each reports `sr` (feasible) and `qr` (Quality Ratio against the
heuristic reference) per instance, averaged by the harness; the group's figure is the
unweighted mean over its tasks (mmnp's macro mean over tasks).
"""

from pathlib import Path

PATH = Path(__file__).parent
