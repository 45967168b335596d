"""Print the folder to pass to `lmms-eval --include_path`."""

from mmnp.lmms_eval_tasks import PATH

print(PATH)
