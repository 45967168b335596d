"""Plug-in packages for the tests, installed the way pip leaves them: a module folder beside a
`NAME-VERSION.dist-info` whose `entry_points.txt` declares the entry points, so that
`importlib.metadata` finds them once the folder is on sys.path (or PYTHONPATH)."""

from __future__ import annotations

from pathlib import Path

# A backend from outside mmnp: it answers every instance with the task's heuristic reference
# (so a run through it scores SR 1), each answer after the `note` its --model-args give. Written
# without postponed annotations, as a plug-in author may, so its Options' types are real types.
REFERENCE_BACKEND = '''
import dataclasses

from mmnp.evaluation.backend import Completion, SelfTest, option
from mmnp.registry import get_task

IMPORTED = True


@dataclasses.dataclass(frozen=True)
class ReferenceOptions:
    note: str = option("", "a line written before every answer")
    repeat: int = option(1, "how many times the answer is written")


class ReferenceBackend:
    """Answers with the instance's heuristic reference."""

    Options = ReferenceOptions
    self_test = SelfTest(target="any", model_args={"note": "from the plug-in", "repeat": 2})

    def __init__(self, target, options):
        self.name, self.options = f"reference:{target}", options

    def run(self, requests, sampling, emit):
        for r in requests:
            task = get_task(r.instance.task)
            answer = task.format_answer(r.instance.reference["heuristic"]["solution"])
            emit(r, Completion("\\n".join([self.options.note] + [answer] * self.options.repeat)))


class NeedsTPU(ReferenceBackend):
    """A backend that cannot run on the test machine, and says why."""

    self_test = SelfTest(skip="needs a TPU pod")
'''

BROKEN_BACKEND = 'raise RuntimeError("this plug-in is broken on purpose")\n'


def write_distribution(site: Path, dist: str, version: str, modules: dict[str, str],
                       entry_points: dict[str, dict[str, str]]) -> Path:
    """Install `modules` (name -> source; a name such as "pkg/sub/mod" is a module inside folders,
    which Python imports as namespace packages) and a dist-info declaring `entry_points`
    (group -> {name: "module:attr"}) under `site`; returns `site`."""
    site.mkdir(parents=True, exist_ok=True)
    for name, source in modules.items():
        (site / f"{name}.py").parent.mkdir(parents=True, exist_ok=True)
        (site / f"{name}.py").write_text(source)
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in names.items()) + "\n"
        for group, names in entry_points.items()))
    return site


def reference_site(site: Path) -> Path:
    """A working plug-in distribution with two backends: `reference` (runs anywhere) and `tpu`
    (declares why the conformance suite must skip it)."""
    return write_distribution(site, "mmnp-reference-plugin", "0.1", {"mmnp_reference_plugin": REFERENCE_BACKEND},
                              {"mmnp.backends": {"reference": "mmnp_reference_plugin:ReferenceBackend",
                                                 "tpu": "mmnp_reference_plugin:NeedsTPU"}})


def broken_site(site: Path) -> Path:
    """A plug-in distribution whose backend module raises on import."""
    return write_distribution(site, "mmnp-broken-plugin", "0.2", {"mmnp_broken_plugin": BROKEN_BACKEND},
                              {"mmnp.backends": {"broken": "mmnp_broken_plugin:Backend"}})


# An 11th task from outside mmnp: its three files (tests/plugin_task/, built on mmnp's graph kit)
# and one entry point, nothing else.
TASK_FILES = Path(__file__).parent / "plugin_task" / "mmnp_independent_set"
LAYERS = ("generators", "verifiers", "solvers")


def task_site(site: Path, broken: dict[str, str] | None = None, dist: str = "mmnp-independent-set",
              package: str = "mmnp_independent_set", name: str = "independent_set") -> Path:
    """A plug-in distribution adding the task `name` (independent_set's three files; `broken`
    replaces a layer's source, e.g. {"generators": ...})."""
    sources = {layer: (TASK_FILES / layer / "independent_set.py").read_text() for layer in LAYERS} | (broken or {})
    modules = {f"{package}/{layer}/{name}": source for layer, source in sources.items()}
    return write_distribution(site, dist, "0.1", modules, {"mmnp.tasks": {name: package}})
