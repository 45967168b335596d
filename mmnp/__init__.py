"""mmnp: MM-NP-Bench, ten NP-hard optimisation tasks as text and images, with verifiers,
reference solvers, evaluation and RL trainers.

    import mmnp
    task = mmnp.get_task("tsp")
    inst = task.generate("medium", seed=3)
    verdict = task.verify(inst, "... Answer: [0, 4, 2, 1, 3]")
    for inst in mmnp.load_dataset("data/"): ...
"""

from importlib.metadata import PackageNotFoundError, version

from mmnp.core import Instance, Verdict, Violation
from mmnp.registry import get_task, list_tasks, register

try:
    __version__ = version("mmnp")  # the one place it is written is pyproject.toml
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"


def load_dataset(path, tasks=None, difficulties=None, *, allow_modified=False):
    """Iterate the instances of a dataset written by `mmnp generate`, after checking it
    against its manifest (see `mmnp.dataset`)."""
    from mmnp.dataset import load_dataset as _load

    return _load(path, tasks=tasks, difficulties=difficulties, allow_modified=allow_modified)


__all__ = ["Instance", "Verdict", "Violation", "get_task", "list_tasks", "load_dataset", "register", "__version__"]
