"""Print the folder to pass to `lm_eval --include_path` (written from the task registry);
`--data PATH` names the data its tasks read, and its group `mmnp_text` lists the tasks PATH holds."""

import argparse
import sys

from mmnp.errors import MMNPError
from mmnp.lm_eval_tasks import include_path

parser = argparse.ArgumentParser(prog="python -m mmnp.lm_eval_tasks", description=__doc__)
parser.add_argument("--data", help="a folder from `mmnp generate`, an `mmnp export` folder or a Hub dataset "
                                   "(hf://owner/name); without it, pass --metadata '{\"data\": ...}' to lm_eval")
try:
    print(include_path(parser.parse_args().data))
except MMNPError as e:  # unreadable or damaged data: one line, as mmnp's commands say it
    sys.exit(f"error: {e}")
