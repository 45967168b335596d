"""Print the folder to pass to `lm_eval --include_path` (written from the task registry)."""

from mmnp.lm_eval_tasks import include_path

print(include_path())
