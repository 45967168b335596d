"""Print the folder to pass to `lmms-eval --include_path` (written from the task registry);
`--data PATH` names the export to read (default: ./mmnp-export where lmms-eval runs)."""

import argparse
import sys

from mmnp.errors import MMNPError
from mmnp.lmms_eval_tasks import DEFAULT_DATA, include_path

parser = argparse.ArgumentParser(prog="python -m mmnp.lmms_eval_tasks", description=__doc__)
parser.add_argument("--data", default=DEFAULT_DATA, help="the `mmnp export --split-by task` folder lmms-eval reads")
try:
    print(include_path(parser.parse_args().data))
except MMNPError as e:  # not an export, or a damaged one: one line, as mmnp's commands say it
    sys.exit(f"error: {e}")
