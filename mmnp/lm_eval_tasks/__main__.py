"""Print the folder to pass to `lm_eval --include_path`."""

from mmnp.lm_eval_tasks import PATH

print(PATH)
