"""Every command in README.md and docs/*.md runs, or says why it does not.

A fenced shell or Python block carries a marker on the line above it (docs/contributing.md,
"Commands in these pages are tested"): `<!-- runnable -->`, `<!-- runnable after line N: why -->`
or `<!-- not run: why -->`. Runnable blocks run in order, one temporary folder per page, with
`mmnp` and `python` from this venv and nothing fetched from the network; the `mmnp` commands of
every block, run or not, may only use flags their `--help` lists, so a renamed flag fails here
even where the command itself is too big to run. The README's stated main-job scores are
checked against what the main job writes, and every link, repository path and `mmnp.*` name
in the pages must lead somewhere.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import resource
import shlex
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from mmnp.cli import app

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL = {"bash", "sh", "shell", "console", "zsh"}
CODE = SHELL | {"python"}
MARKER = re.compile(r"<!--\s*(runnable|not run)(?: after line (\d+))?\s*(?::\s*(.*?))?\s*-->")
LOOKS_LIKE_A_COMMAND = re.compile(r"^\s*(\$ |mmnp |pip |python3? |bash |lm_eval |lmms-eval |accelerate )")
BLOCK_TIMEOUT_S = 600


@dataclass
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    marker: str | None  # "runnable", "not run" or None
    skip: int  # lines left out of a runnable block
    reason: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The page's fenced blocks with the marker on the line above each (blank lines skipped)."""
    lines = page.read_text().splitlines()
    found, i = [], 0
    while i < len(lines):
        if not lines[i].startswith("```"):
            i += 1
            continue
        lang = lines[i][3:].strip().split(" ")[0].lower()
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), len(lines))
        above = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        mark = MARKER.fullmatch(above.strip())
        found.append(Block(page, i + 1, lang, "\n".join(lines[i + 1:end]),
                           mark and mark[1], int(mark[2] or 0) if mark else 0, (mark and mark[3]) or ""))
        i = end + 1
    return found


ALL = [b for page in PAGES for b in blocks(page)]


def test_every_command_block_says_whether_it_runs():
    problems = []
    for b in ALL:
        if b.lang in CODE:
            if b.marker is None:
                problems.append(f"{b.where}: a {b.lang} block without <!-- runnable --> or <!-- not run: why -->")
            elif b.marker == "not run" and not b.reason:
                problems.append(f"{b.where}: <!-- not run --> without a reason")
            elif b.skip and (not b.reason or b.skip >= len(b.text.splitlines())):
                problems.append(f"{b.where}: 'runnable after line {b.skip}' needs a reason and lines after it")
        elif b.marker:
            problems.append(f"{b.where}: a marker on a {b.lang or 'unlabelled'} block, which is never run")
        elif not b.lang and any(LOOKS_LIKE_A_COMMAND.match(line) and line.isascii()  # not a drawn diagram
                                for line in b.text.splitlines()):
            problems.append(f"{b.where}: an unlabelled block of commands: label it bash and mark it")
    assert not problems, "\n".join(problems)
    assert any(b.marker == "runnable" for b in ALL if b.page.name == "README.md")


# -- flags ----------------------------------------------------------------------------------------

def logical_lines(text: str) -> list[str]:
    """Shell lines with continuations joined and comments dropped."""
    joined = re.sub(r"\\\n", " ", text)
    return [re.sub(r"(^|\s)#.*$", "", line) for line in joined.splitlines()]


def mmnp_calls(block: Block) -> list[list[str]]:
    """Each `mmnp ...` invocation of a shell block, as its words after `mmnp`."""
    calls = []
    for line in logical_lines(block.text):
        try:
            words = shlex.split(line)
        except ValueError:  # an unbalanced quote: shlex cannot read it, and neither could bash
            pytest.fail(f"{block.where}: cannot split {line!r}")
        start = 0
        for k, word in enumerate(words + [";"]):
            if word in {"&&", "||", ";", "|", "do", "then"} or word.endswith(";"):
                part = words[start:k]
                start = k + 1
                for m, w in enumerate(part):
                    if w == "mmnp" or w.endswith("/mmnp"):
                        calls.append(part[m + 1:])
                        break
    return calls


@cache
def help_flags(path: tuple[str, ...]) -> frozenset[str] | None:
    """The flags `mmnp PATH --help` lists (None when PATH is no command)."""
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "250", "NO_COLOR": "1"})
    if result.exit_code != 0:
        return None
    return frozenset(re.findall(r"(?<![\w-])--[a-z0-9][a-z0-9-]*", result.output))


@cache
def subcommands(path: tuple[str, ...]) -> frozenset[str]:
    command = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]
    return frozenset(getattr(command, "commands", {}))


@cache
def backend_options(name: str) -> frozenset[str] | None:
    """The option names `mmnp backends NAME` lists (None for no such backend)."""
    result = CliRunner().invoke(app, ["backends", name, "--json"])
    return frozenset(o["name"] for o in json.loads(result.output)["options"]) if result.exit_code == 0 else None


def model_arg_problems(block: Block, path: tuple[str, ...], words: list[str]) -> list[str]:
    """`mmnp eval --model NAME:... --model-args k=v,...`: NAME is a backend and each k one of its options."""
    if path != ("eval",) or "--model" not in words[:-1]:
        return []
    name = words[words.index("--model") + 1].split(":", 1)[0]
    options = backend_options(name)
    if options is None:
        return [f"{block.where}: `mmnp eval --model {name}:...` names no backend"]
    given = words[words.index("--model-args") + 1].split(",") if "--model-args" in words[:-1] else []
    return [f"{block.where}: backend {name} has no option {k}" for k in (kv.split("=", 1)[0] for kv in given)
            if k not in options]


def _with_algorithm(path: tuple[str, ...], words: list[str]) -> tuple[str, ...]:
    """`mmnp train --algo NAME --help` lists NAME's own flags beside the shared ones."""
    if path == ("train",) and "--algo" in words[:-1]:
        return (*path, "--algo", words[words.index("--algo") + 1])
    return path


def test_every_mmnp_flag_in_the_pages_exists():
    problems, seen = [], 0
    for b in ALL:
        if b.lang not in SHELL:
            continue
        for words in mmnp_calls(b):
            path: tuple[str, ...] = ()
            while words and words[0] in subcommands(path):
                path, words = (*path, words[0]), words[1:]
            if not path:
                problems.append(f"{b.where}: `mmnp {' '.join(words[:2])}` names no command")
                continue
            if path[0] in NEEDS and missing_extras([b]):
                continue  # its help lists its options only with the extra installed
            known = help_flags(_with_algorithm(path, words))
            for word in words:
                flag = word.split("=", 1)[0]
                if flag.startswith("--") and flag not in known:
                    problems.append(f"{b.where}: `mmnp {' '.join(path)}` has no option {flag}")
            problems += model_arg_problems(b, path, words)
            seen += 1
    assert not problems, "\n".join(problems)
    assert seen >= 40  # the pages' mmnp commands were found, not skipped


# -- running ----------------------------------------------------------------------------------------

RUNNABLE = {page: [b for b in blocks(page) if b.marker == "runnable"] for page in PAGES}
NEEDS = {"tiny-model": ("trl", "train"), "sft": ("trl", "train"), "train": ("trl", "train"),
         "export": ("pyarrow", "hf"), "datasets": ("datasets", "hf")}  # what a command needs: (module, extra)


def missing_extras(bs: list[Block]) -> set[str]:
    """The extras a page's blocks need that this venv lacks (the suite skips, as its other tests do)."""
    words = {w for b in bs for w in re.findall(r"[\w-]+", b.text)}
    return {extra for word, (module, extra) in NEEDS.items()
            if word in words and importlib.util.find_spec(module) is None}


@pytest.mark.parametrize("page", [p for p in PAGES if RUNNABLE[p]], ids=lambda p: p.name)
def test_runnable_blocks_run(page, tmp_path):
    if lacking := missing_extras(RUNNABLE[page]):
        pytest.skip(f"{page.name}'s commands need the {', '.join(sorted(lacking))} extra(s)")
    env = {**os.environ,
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "MMNP_CACHE": str(tmp_path / ".cache-mmnp"), "HF_HOME": str(tmp_path / ".cache-hf"),
           "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "MPLBACKEND": "Agg", "NO_COLOR": "1", "COLUMNS": "120"}
    work = tmp_path / "work"
    work.mkdir()
    for n, b in enumerate(RUNNABLE[page]):
        body = "\n".join(b.text.splitlines()[b.skip:]) + "\n"
        script = tmp_path / f"block{n}.{'py' if b.lang == 'python' else 'sh'}"
        script.write_text(body)
        argv = [sys.executable, str(script)] if b.lang == "python" else ["bash", "-euo", "pipefail", str(script)]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=BLOCK_TIMEOUT_S)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        print(f"{b.where}: {cpu:.1f} CPU-s")
        assert done.returncode == 0, (f"{b.where}: the block exits {done.returncode}\n{body}\n"
                                      f"--- output (end) ---\n{(done.stdout + done.stderr)[-3000:]}")
    if page.name == "README.md":
        the_main_job_earns_what_the_readme_says(work / "results", page.read_text())


def the_main_job_earns_what_the_readme_says(results: Path, readme: str) -> None:
    """The README's sentence on the main job's scores, against the results.json files it wrote."""
    said = re.search(r"heuristic and optimal baselines score SR (\S+), the parrot floor .*? SR (\S+) and QR (\S+), "
                     r"and the trivial floor .*? SR (\S+) with QR ([\d.]+)", re.sub(r"\s+", " ", readme))
    assert said, "README.md: the sentence stating the main job's scores is gone; update this test with it"
    solver_sr, parrot_sr, parrot_qr, trivial_sr, trivial_qr = (float(x) for x in said.groups())

    def overall(model: str, modality: str) -> tuple[float, float]:
        scores = json.loads((results / f"solver_{model}" / "results.json").read_text())["metrics"][modality]["overall"]
        return round(100 * scores["sr"], 1), round(100 * scores["qr"], 1)

    for modality in ("text", "image"):
        assert overall("heuristic", modality)[0] == overall("optimal", modality)[0] == solver_sr
        assert overall("parrot", modality) == (parrot_sr, parrot_qr)
        assert overall("trivial", modality) == (trivial_sr, trivial_qr)


# -- links ----------------------------------------------------------------------------------------------

def anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens."""
    heads = re.findall(r"^#+\s+(.*?)\s*$", page.read_text(), re.M)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in heads}


def test_every_link_between_the_pages_resolves():
    problems = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if re.match(r"[a-z]+://", target):
                continue
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(ROOT)}: ({target})"
            if not file.is_relative_to(ROOT):
                problems.append(f"{where}: outside the repository, which a clone does not have")
            elif not file.exists():
                problems.append(f"{where}: no such file")
            elif anchor and file.suffix == ".md" and anchor not in anchors(file):
                problems.append(f"{where}: no heading with that anchor")
    assert not problems, "\n".join(problems)


def test_the_shipped_spec_is_the_projects():
    """docs/spec/ ships the specification the code implements (a clone has no ../shared): where the
    project's own copy is at hand, the shipped one is that, byte for byte."""
    shared = ROOT.parent / "shared" / "spec"
    if not shared.is_dir():
        pytest.skip("no ../shared/spec beside this checkout")
    shipped = {p.name: p.read_bytes() for p in (ROOT / "docs" / "spec").glob("*.md")}
    assert shipped == {p.name: p.read_bytes() for p in shared.glob("*.md")}


# -- names of files and modules ---------------------------------------------------------------------

FOLDERS = ("mmnp", "generators", "verifiers", "solvers", "evaluation", "trainers", "tests", "benchmarks",
           "examples", "docs", ".ci")
REPO_PATH = re.compile(rf"(?<![\w/.~-])((?:{'|'.join(map(re.escape, FOLDERS))})/[\w./-]*\w/?)")
DOTTED = re.compile(r"(?<![\w./-])(mmnp(?:\.\w+)+)(?![\w*])")
PACKAGE_DIRS = {"mmnp.generators": "generators", "mmnp.verifiers": "verifiers", "mmnp.solvers": "solvers",
                "mmnp.evaluation": "evaluation", "mmnp.trainers": "trainers", "mmnp": "mmnp"}


def module_file(module: str) -> Path | None:
    """Where the installed namespace keeps `module` (pyproject's package-dir), without importing it."""
    for package, folder in PACKAGE_DIRS.items():  # the longest package first
        if module == package or module.startswith(package + "."):
            base = ROOT / folder / Path(*module[len(package) + 1:].split(".")) if module != package else ROOT / folder
            for file in (base.with_suffix(".py"), base / "__init__.py"):
                if file.is_file():
                    return file
    return None


def top_level_names(file: Path) -> set[str]:
    names = set()
    for node in ast.parse(file.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def dotted_resolves(dotted: str) -> bool:
    """`mmnp.a.b` is a module of the namespace, or a module and one of its top-level names."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        file = module_file(".".join(parts[:cut]))
        if file:
            return cut == len(parts) or parts[cut] in top_level_names(file) or (file.parent / parts[cut]).is_dir()
    return False


def entry_point_groups() -> set[str]:
    """The plug-in groups (`Registry("mmnp.backends", ...)`): names of entry-point groups, not modules."""
    return {group for folder in set(PACKAGE_DIRS.values()) for file in (ROOT / folder).rglob("*.py")
            for group in re.findall(r'Registry\(\s*"(mmnp\.\w+)"', file.read_text())}


def test_every_file_and_module_the_pages_name_exists():
    """A renamed module or moved file leaves no stale name in README or docs/ (placeholders such as
    `generators/<task>.py`, `NAME.py` or `MAX_*` are not names)."""
    problems, groups = [], entry_point_groups()
    for page in PAGES:
        text = page.read_text()
        for path in set(REPO_PATH.findall(text)):
            if re.search(r"[A-Z]{3,}|\*", path.split("/")[-1]) and not (ROOT / path).exists():
                continue  # NAME.py, MAX_*: a placeholder
            if not (ROOT / path).exists():
                problems.append(f"{page.relative_to(ROOT)}: {path} does not exist")
        imports = re.findall(r"from (mmnp[\w.]*) import ([\w, ]+)", text)
        imported = {f"{module}.{name.strip()}" for module, names in imports for name in names.split(",")}
        for dotted in set(DOTTED.findall(text)) | set(re.findall(r"pkg://(mmnp[\w.]+)", text)) | imported:
            if dotted not in groups and not dotted_resolves(dotted):
                problems.append(f"{page.relative_to(ROOT)}: {dotted} names no module or attribute of one")
    assert not problems, "\n".join(sorted(problems))


def every_mmnp_flag(path: tuple[str, ...] = ()) -> set[str]:
    """The flags of every mmnp command and sub-command (`train`: with each algorithm's own)."""
    found = set(help_flags(path) or ())
    if path == ("train",):
        from mmnp.trainers.algorithms import algorithm_names

        for name in algorithm_names():
            found |= help_flags((*path, "--algo", name)) or set()
    for name in subcommands(path):
        found |= every_mmnp_flag((*path, name))
    return found


def test_every_flag_the_prose_names_exists():
    """An option named in the text (`--rounds K`) is one of mmnp's, of a benchmark script's, or of a
    command shown in the pages' blocks (lm_eval, pip, ...)."""
    if importlib.util.find_spec("trl") is None:
        pytest.skip("the train extra is missing: `mmnp train --help` lists algorithm options from TRL's config")
    known = every_mmnp_flag()
    for script in (ROOT / "benchmarks").glob("*.py"):
        known |= set(re.findall(r"""add_argument\(\s*["'](--[\w-]+)""", script.read_text()))
    texts = {page: page.read_text() for page in PAGES}
    known |= {flag for b in ALL for flag in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", b.text)}
    problems = [f"{page.relative_to(ROOT)}: {flag} is no option of mmnp, a benchmark or a command shown"
                for page, text in texts.items()
                for flag in sorted(set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", re.sub(r"```.*?```", "", text,
                                                                                            flags=re.S))) - known)]
    assert not problems, "\n".join(problems)
