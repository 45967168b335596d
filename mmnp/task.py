"""The task protocol: one generator, verifier and solver module per task, bound by `Task`.

A task `x` is three files with the same name, `generators/x.py`, `verifiers/x.py` and
`solvers/x.py` under one package root, that provide the module-level names in the three
Protocols below, and one line that names it (`mmnp.registry`: mmnp's `BUILTIN` table, or a
plug-in's `mmnp.tasks` entry point). Everything per task is declared in those files: the
generator's presets, ladder (`LEVELS`, `mmnp.levels`), transcription form (`TRANSCRIPTION`,
`mmnp.transcribe`), import formats (`IMPORTS`, `mmnp.importers`), category and picture kinds
(each `render` names its canvas's kind); the verifier's rules, objective direction and the
wrong answers that show each rule is checked. Everything else (datasets, the CLI, metrics,
rewards, the conformance tests) works through this class.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import math
import zlib
from dataclasses import dataclass
from typing import Any, Mapping, Protocol

import numpy as np

from mmnp import levels
from mmnp.core import CATEGORIES, DIFFICULTIES, Instance, Verdict, Violation, canonical_json, content_hash
from mmnp.errors import UsageError
from mmnp.parsing import ParseError
from mmnp.render import DEFAULT_SIZE, GREEN, MAX_IMAGE_SIZE, RED, WHITE, Canvas

DEFAULT_TIME_LIMIT = 10.0  # deterministic seconds of CP-SAT work per instance
TIME_LIMIT_HELP = ("Exact solver's deterministic time limit per instance (CP-SAT work units, not wall-clock seconds: "
                   "the same references on any machine).")
PICTURE_VERSION = 2  # 2: graph drawings with checked invariants, anti-aliased text, re-flowed tables


class GeneratorModule(Protocol):
    CATEGORY: str  # one of mmnp.core.CATEGORIES
    Config: type  # a frozen dataclass; (lo, hi) tuples are ranges sampled per instance
    PRESETS: Mapping[str, Any]  # difficulty -> Config
    IMAGE_PROMPT: str  # the image modality's text: instruction and answer format only
    VERSION: int  # bumped when the task's instances, prompts or picture change (recorded in every manifest)
    LEVELS: tuple  # the ladder L1..L10: preset names or Config field overrides (`mmnp.levels`)
    TRANSCRIPTION: Any  # optional: the perception probe's `mmnp.transcribe.Form`
    IMPORTS: tuple[str, ...]  # optional: `mmnp import` formats whose data the task takes (e.g. ("dimacs",))

    def generate(self, params: dict, rng: np.random.Generator) -> tuple[dict, Any]: ...  # (data, planted)
    def prompt(self, data: dict) -> str: ...
    def render(self, data: dict, size: int, solution: Any = None, violations: tuple[Violation, ...] = ()) -> Canvas: ...


class VerifierModule(Protocol):
    DIRECTION: str  # "min" or "max": the objective's sense
    VIOLATION_KINDS: Mapping[str, str]  # kind -> what it means

    def parse(self, text: str) -> Any: ...  # raises ParseError
    def check(self, data: dict, solution: Any) -> tuple[float | None, list[Violation]]: ...
    def canonical(self, data: dict, solution: Any) -> Any: ...  # hashable; equal for equivalent solutions
    def format(self, solution: Any) -> str: ...  # the value of an `Answer:` line
    def wrong_answers(self, instance: Instance) -> list[tuple[str, str]]: ...  # (answer text, kind it violates)


class SolverModule(Protocol):
    def heuristic(self, data: dict) -> Any: ...
    def optimal(self, data: dict, time_limit: float, hint: Any) -> tuple[Any, bool]: ...  # (solution, proven)
    def random(self, data: dict, rng: np.random.Generator) -> Any: ...
    def trivial(self, data: dict) -> Any: ...  # the simplest feasible answer (all vertices, ...): the SR/QR floor


def sample_params(config: Any, rng: np.random.Generator) -> dict:
    """Concrete parameters for one instance: each (lo, hi) range sampled, scalars kept."""
    params = {}
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if isinstance(value, tuple) and len(value) == 2:
            lo, hi = value
            if isinstance(lo, int) and isinstance(hi, int):
                value = int(rng.integers(lo, hi + 1))
            else:
                value = round(float(rng.uniform(lo, hi)), 3)
        params[f.name] = value
    return params


def recorded_params(config: Any, params: dict) -> dict:
    """The parameters an instance record shows: all of them, except a field marked
    `metadata={"recorded": "when_set"}` while it has its default. Parameters added to a task
    after its datasets were published are marked so, and those datasets regenerate byte for byte."""
    quiet = {f.name: f.default for f in dataclasses.fields(config) if f.metadata.get("recorded") == "when_set"}
    return {k: v for k, v in params.items() if not (k in quiet and v == quiet[k])}


def coerce_override(config: Any, key: str, value: Any) -> Any:
    """Turn a CLI string ("25", "20-30", "0.3", "strong") into the type of the config field `key`
    (a text field with `metadata={"choices": ...}` takes one of those)."""
    fields = {f.name: f for f in dataclasses.fields(config)}
    if key not in fields:
        raise UsageError(f"unknown parameter {key!r} for {type(config).__module__.rsplit('.', 1)[-1]}; "
                         f"valid parameters: {', '.join(fields)}")
    current = getattr(config, key)
    if isinstance(current, str):  # a text field: one of its declared choices
        choices = fields[key].metadata.get("choices")
        if not isinstance(value, str) or (choices is not None and value not in choices):
            raise UsageError(f"parameter {key}={value!r}: expected "
                             + (f"one of {', '.join(choices)}" if choices is not None else "a text"))
        return value
    if not isinstance(value, str):
        return tuple(value) if isinstance(value, list) else value
    number = float if isinstance(current, float) or (isinstance(current, tuple) and isinstance(current[0], float)) else int
    try:
        if "-" in value.strip("-"):
            lo, hi = value.split("-", 1)
            return (number(lo), number(hi))
        return number(value)
    except ValueError:
        kind = "an integer" if number is int else "a number"
        raise UsageError(f"parameter {key}={value!r}: expected {kind} or a range like 20-30") from None


@dataclass(frozen=True)
class Task:
    name: str
    category: str
    direction: str  # "min" or "max"
    generator: GeneratorModule
    verifier: VerifierModule
    solver: SolverModule

    @classmethod
    def from_package(cls, name: str, package: str = "mmnp") -> Task:
        """Bind `<package>.{generators,verifiers,solvers}.<name>` into a task; ValueError saying
        which module cannot be imported or what it lacks (a plug-in's one line)."""
        modules = {}
        for layer, protocol in (("generators", GeneratorModule), ("verifiers", VerifierModule), ("solvers", SolverModule)):
            where = f"{package}.{layer}.{name}"
            try:
                modules[layer] = module = importlib.import_module(where)
            except Exception as e:  # whatever a task module's import raises: this task's use fails
                raise ValueError(f"{where} cannot be imported ({type(e).__name__}: {e})") from e
            missing = [a for a in _required(protocol) if not hasattr(module, a)]
            if missing:
                raise ValueError(f"{where} lacks {', '.join(missing)} (see mmnp.task.{protocol.__name__})")
        generator, verifier = modules["generators"], modules["verifiers"]
        if generator.CATEGORY not in CATEGORIES:
            raise ValueError(f"{package}.generators.{name}.CATEGORY is {generator.CATEGORY!r}; "
                             f"use one of {', '.join(CATEGORIES)}")
        if verifier.DIRECTION not in ("min", "max"):
            raise ValueError(f"{package}.verifiers.{name}.DIRECTION is {verifier.DIRECTION!r}; use min or max")
        try:
            levels.check_ladder(generator.LEVELS, generator.PRESETS, generator.Config)
        except ValueError as e:
            raise ValueError(f"{package}.generators.{name}: {e}") from None
        return cls(name, generator.CATEGORY, verifier.DIRECTION, generator, verifier, modules["solvers"])

    # -- instances --------------------------------------------------------------------
    @property
    def presets(self) -> Mapping[str, Any]:
        return self.generator.PRESETS

    @property
    def version(self) -> int | None:
        """The generator module's `VERSION`: what a manifest and a release record of the task, so data
        made before its instances, prompts or picture changed is told apart (None: a plugin without one)."""
        return getattr(self.generator, "VERSION", None)

    def config(self, difficulty: str, **overrides: Any) -> Any:
        """The generator parameters of a preset (easy/medium/hard) or a ladder level (L1..L10, bench)."""
        if difficulty in self.presets:
            base = self.presets[difficulty]
        elif levels.is_level(difficulty):
            base = levels.level_config(self, difficulty)
        else:
            raise UsageError(f"unknown difficulty {difficulty!r} for {self.name}; choose from "
                             f"{', '.join(self.presets)}, bench or a level L1..L{levels.TOP}")
        return dataclasses.replace(base, **{k: coerce_override(base, k, v) for k, v in overrides.items()})

    def rng(self, difficulty: str, seed: int) -> np.random.Generator:
        """The instance's random stream: a pure function of (task, difficulty, seed)."""
        code = DIFFICULTIES.index(difficulty) if difficulty in DIFFICULTIES else zlib.crc32(difficulty.encode())
        return np.random.default_rng(np.random.SeedSequence([zlib.crc32(self.name.encode()), code, seed]))

    def generate(self, difficulty: str = "medium", seed: int = 0, *, id: str | None = None,
                 optimal: bool = False, time_limit: float = DEFAULT_TIME_LIMIT, **overrides: Any) -> Instance:
        """A seeded instance with its prompts and references (the exact one when `optimal`)."""
        params, data, planted = self._draw(difficulty, seed, overrides)
        planted_reference = self._reference(data, planted) if planted is not None else None
        # the generator's planted answer is a candidate too: the reference never falls below it
        heuristic = self._better(self._reference(data, self.solver.heuristic(data)), planted_reference)
        reference: dict[str, Any] = {"heuristic": heuristic, "optimal": None}
        if planted_reference is not None:
            reference["planted"] = planted_reference
        hardness = None
        if optimal:  # the hint: the heuristic's answer, which already holds the planted one where better
            reference["optimal"], work = self.best_known(data, heuristic, time_limit)
            hardness = self._hardness(reference, reference["optimal"]["proven"], work)
        return Instance(
            id=id or f"{self.name}-{difficulty}-{seed}",
            task=self.name,
            difficulty=difficulty,
            seed=seed,
            params=params,
            data=data,
            hash=content_hash(self.name, data),
            prompt=self.generator.prompt(data),
            image_prompt=self.generator.IMAGE_PROMPT,
            reference=reference,
            level=levels.level_of(difficulty),
            hardness=hardness,
        )

    def _draw(self, difficulty: str, seed: int, overrides: Mapping[str, Any]) -> tuple[dict, dict, Any]:
        """(recorded parameters, data, planted solution): what the seed makes before any solver runs."""
        rng = self.rng(difficulty, seed)
        config = self.config(difficulty, **overrides)
        params = sample_params(config, rng)
        data, planted = self.generator.generate(params, rng)
        return recorded_params(config, params), data, planted

    def mismatch(self, inst: Instance, overrides: Mapping[str, Any] | None = None, optimal: bool = False,
                 picture: tuple[str, int] | None = None) -> str | None:
        """What in a generated record is not what `generate(..., optimal=optimal)` makes, or None;
        never raises. What a resumed or merged run checks before it trusts a line a log holds
        instead of making the instance again (an edited part must not reach a dataset):

        - the instance part, drawn again from its seed and compared whole (milliseconds);
        - the heuristic reference, computed again (deterministic; the planted answer where better),
          and the planted one, the generator's;
        - the exact reference (present exactly when `optimal`): its solution verifies to its
          objective, which is not worse than the heuristic's; a proven one carries no bound, an
          unproven bound does not exclude it; `hardness` agrees with it. What CP-SAT alone could
          say again (the proof, the bound's value, the work counts) is not solved again;
        - with `picture` (the PNG's SHA-256 and the size it was drawn at), the picture, drawn again."""
        try:
            return self._mismatch(inst, overrides or {}, optimal, picture)
        except Exception as e:  # noqa: BLE001 - a hostile record is reported, never a crash
            return f"its record is malformed ({type(e).__name__})"

    def reference_mismatch(self, inst: Instance) -> str | None:
        """Which of a record's references (heuristic, planted, exact) does not verify, feasible, to
        the objective it records, or None; never raises. Microseconds a reference: what every
        reader checks, since a record edited with its manifest's hashes recomputed passes the
        hashes, and QR would be taken against an objective no solution has."""
        try:
            reference = inst.reference
            for source in ("heuristic", "planted", "optimal"):
                made = reference.get(source)
                if made is None and source != "heuristic":
                    continue
                objective, violations = self.verifier.check(inst.data, made["solution"])
                if violations or objective != made["objective"]:
                    found = f"is infeasible ({violations[0].kind})" if violations else f"has objective {objective:g}"
                    return f"its {source} reference's solution {found}, where the record says {made['objective']:g}"
            return None
        except Exception as e:  # noqa: BLE001 - a hostile record is reported, never a crash
            return f"its references are malformed ({type(e).__name__})"

    def settings_mismatch(self, inst: Instance, overrides: Mapping[str, Any], optimal: bool,
                          image_size: int | None, time_limit: float = DEFAULT_TIME_LIMIT) -> str | None:
        """What in a record contradicts the settings a dataset claims to be made with, or None;
        never raises. The cheap part of `mismatch` (milliseconds: no solver runs), which a rerun
        of a finished dataset checks on every record, since its manifest's `arguments` are a claim
        no hash covers: the instance part drawn again from the seed with `overrides`, an exact
        reference and hardness exactly when `optimal`, the exact solver's work within what
        `time_limit` allows (`_time_limit_mismatch`), each reference verifying to its objective
        (`reference_mismatch`), a picture exactly when `image_size` (None: --no-images), drawn
        that wide."""
        try:
            problem, _, _ = self._drawn_mismatch(inst, overrides)
            if problem:
                return problem
            if (inst.reference.get("optimal") is not None or inst.hardness is not None) != optimal:
                return f"it {'lacks' if optimal else 'has'} an exact reference (the settings say optimal={optimal})"
            if optimal and (problem := _time_limit_mismatch(inst.hardness, time_limit)):
                return problem
            if problem := self.reference_mismatch(inst):
                return problem
            if image_size is None:
                return "it describes a picture (the settings say --no-images)" \
                    if inst.picture is not None or inst.image is not None else None
            if inst.image is None or not isinstance(inst.picture, dict) or inst.picture.get("width") != image_size:
                return f"its picture is not drawn at --image-size {image_size}"
            return None
        except Exception as e:  # noqa: BLE001 - a hostile record is reported, never a crash
            return f"its record is malformed ({type(e).__name__})"

    def _drawn_mismatch(self, inst: Instance, overrides: Mapping[str, Any]) -> tuple[str | None, dict, Any]:
        """(what in the instance part is not what its seed makes, or None; the data and planted
        answer the seed makes)."""
        try:
            params, data, planted = self._draw(inst.difficulty, inst.seed, overrides)
        except Exception as e:  # noqa: BLE001 - a record naming a difficulty or parameters mmnp refuses
            return f"its seed and difficulty make no instance ({e})", {}, None
        made = (content_hash(self.name, data), canonical_json(params), self.generator.prompt(data),
                self.generator.IMAGE_PROMPT, levels.level_of(inst.difficulty))
        if (inst.hash, canonical_json(inst.params), inst.prompt, inst.image_prompt, inst.level) != made \
                or content_hash(self.name, inst.data) != inst.hash:
            return "its instance is not the one its seed makes", data, planted
        return None, data, planted

    def _mismatch(self, inst: Instance, overrides: Mapping[str, Any], optimal: bool,
                  picture: tuple[str, int] | None) -> str | None:
        problem, data, planted = self._drawn_mismatch(inst, overrides)
        if problem:
            return problem
        if picture is not None:
            png, info = self.picture(inst, picture[1])
            if hashlib.sha256(png).hexdigest() != picture[0] or canonical_json(info) != canonical_json(inst.picture):
                return "its picture is not the one its instance draws"
        elif inst.picture is not None or inst.image is not None:
            return "it describes a picture the run does not draw"
        reference = inst.reference
        planted_reference = self._reference(data, planted) if planted is not None else None
        wanted = {"heuristic", "optimal"} | ({"planted"} if planted is not None else set())
        if not isinstance(reference, dict) or set(reference) != wanted:
            return f"its references are not {', '.join(sorted(wanted))}"
        if planted_reference is not None and canonical_json(reference["planted"]) != canonical_json(planted_reference):
            return "its planted reference is not the generator's"
        heuristic = self._better(self._reference(data, self.solver.heuristic(data)), planted_reference)
        if canonical_json(reference["heuristic"]) != canonical_json(heuristic):
            return "its heuristic reference is not the heuristic's"
        best = reference["optimal"]
        if not optimal:
            return None if best is None and inst.hardness is None else \
                "it has an exact reference or hardness the run does not make"
        if not isinstance(best, dict) or not {"objective", "solution", "proven"} <= set(best) <= {
                "objective", "solution", "proven", "bound"} or not isinstance(best["proven"], bool):
            return "its exact reference is malformed"
        objective, violations = self.verifier.check(data, best["solution"])
        if violations or objective != best["objective"] or self.is_better(heuristic["objective"], objective):
            return "its exact reference does not verify to its objective, or is worse than the heuristic's"
        bound = best.get("bound")
        if bound is not None and (best["proven"] or self.is_better(objective, bound)):
            return "its exact reference's bound contradicts it"
        expected = self._hardness({"optimal": best, "heuristic": heuristic}, best["proven"],
                                  {"deterministic_time": 0, "num_branches": 0, "num_conflicts": 0})
        work = ("deterministic_time", "num_branches", "num_conflicts")
        hardness = inst.hardness
        if not isinstance(hardness, dict) or set(hardness) != set(expected) \
                or any(hardness[key] != expected[key] for key in expected if key not in work) \
                or not all(isinstance(hardness[key], (int, float)) and not isinstance(hardness[key], bool)
                           and hardness[key] >= 0 for key in work):
            return "its hardness does not agree with its references"
        return None

    def best_known(self, data: dict, hint: dict, time_limit: float = DEFAULT_TIME_LIMIT) -> tuple[dict, dict]:
        """The exact reference from the exact solver and `hint` (a reference: `{"objective",
        "solution"}`): `{"objective", "solution", "proven"}`, plus `bound` when unproven and the
        solver has one, and the solver's work (`cpsat.effort`). Never worse than the hint: where
        CP-SAT finds nothing in its time (large instances, small limits) or stops at a worse
        answer, the hint is kept, unproven. The one place this is decided, for generated and
        imported references and the `solver:optimal` baseline alike."""
        from mmnp.solvers import cpsat

        with cpsat.effort() as work:
            try:
                solution, proven = self.solver.optimal(data, time_limit, hint["solution"])
                found = self._reference(data, solution)
            except cpsat.NoSolution:
                found, proven = hint, False
        if self.is_better(hint["objective"], found["objective"]):
            found = hint  # the solver stopped before reaching the hint's objective
        best = {"objective": found["objective"], "solution": found["solution"], "proven": proven}
        if not proven and work["bound"] is not None:
            best["bound"] = self._bound(work["bound"])
        return best, work

    def _reference(self, data: dict, solution: Any) -> dict:
        objective, violations = self.verifier.check(data, solution)
        if violations:
            raise RuntimeError(f"{self.name}: a reference solver returned an infeasible solution: {violations[0].message}")
        return {"objective": objective, "solution": solution}

    def _bound(self, bound: float) -> float:
        """The solve's best objective bound (CP-SAT's, or a task's own where tighter:
        `cpsat.tighten_bound`), rounded inward to an integer (every objective is one)."""
        return float(math.ceil(bound - 1e-6) if self.direction == "min" else math.floor(bound + 1e-6))

    def _hardness(self, reference: dict, proven: bool, work: dict) -> dict:
        """How hard the instance is: the heuristic's relative gap to the best known objective and
        the exact solver's deterministic work (the level ladder is calibrated on these)."""
        best, heuristic = reference["optimal"]["objective"], reference["heuristic"]["objective"]
        return {"heuristic_gap": round(abs(best - heuristic) / abs(best), 6) if best else 0.0, "proven": proven,
                "deterministic_time": round(work["deterministic_time"], 4), "num_branches": work["num_branches"],
                "num_conflicts": work["num_conflicts"]}

    def _better(self, a: dict, b: dict | None) -> dict:
        if b is None:
            return a
        return b if self.is_better(b["objective"], a["objective"]) else a

    def is_better(self, x: float, y: float) -> bool:
        return x < y if self.direction == "min" else x > y

    # -- answers ----------------------------------------------------------------------
    def verify(self, instance: Instance | Mapping, text: str) -> Verdict:
        """Parse and check a model's response. Never raises, never evaluates the text."""
        try:
            solution = self.verifier.parse(text)
        except ParseError as e:
            return Verdict(parsed=False, error=str(e))
        except Exception as e:  # a parser bug must not crash an RL loop; the tests hunt these
            return Verdict(parsed=False, error=f"internal parser error ({type(e).__name__}); please report it")
        try:
            return self.check(instance, solution)
        except (TypeError, KeyError):
            raise  # a malformed instance is the caller's error, not the model's
        except Exception as e:  # the instance's data broke the check (e.g. an edge to a missing vertex)
            return Verdict(parsed=True, error=f"the verifier failed on this instance ({type(e).__name__}: {e}); "
                                              "is its data damaged? (else please report it)")

    def check(self, instance: Instance | Mapping, solution: Any) -> Verdict:
        """Check a structured solution (as `parse` returns it) against the instance."""
        objective, violations = self.verifier.check(_data(instance), solution)
        return Verdict(parsed=True, feasible=not violations, objective=None if violations else objective,
                       violations=violations, solution=solution)

    def format_answer(self, solution: Any) -> str:
        return f"Answer: {self.verifier.format(solution)}"

    def quality_ratio(self, objective: float | None, reference: float) -> float:
        """NP-Bench's ratio against `reference`; 0 for no (infeasible) or zero-valued answers."""
        if objective is None:
            return 0.0
        if self.direction == "min":
            return reference / objective if objective > 0 else 0.0
        return objective / reference if reference > 0 else 0.0

    # -- pictures ---------------------------------------------------------------------
    def picture(self, instance: Instance | Mapping, size: int = DEFAULT_SIZE) -> tuple[bytes, dict]:
        """The instance's PNG and what the record says about it: the picture version, its
        pixel size, its kind (`mmnp.render.PICTURE_KINDS`: image scores are split by it) and,
        for graphs, the vertex layout (`mmnp.render.GraphDrawing`)."""
        canvas = self._whole(instance, size)
        info = {"version": PICTURE_VERSION, "width": canvas.width, "height": canvas.height,
                "kind": canvas.kind or "unspecified"}
        if canvas.layout is not None:
            info["layout"] = canvas.layout
        return canvas.png(), info

    def _whole(self, instance: Instance | Mapping, size: int) -> Canvas:
        """The instance's picture at `size`, or a UsageError where some of its text would fall off the
        canvas: a picture that cuts a target's last digits or a meeting's attendees asks for an
        answer its reader cannot give, so it is refused, naming the width that holds it."""
        data = _data(instance)
        canvas = self.generator.render(data, size)
        if not canvas.clipped:
            return canvas
        holds = next((width for width in range(size + 32, MAX_IMAGE_SIZE + 32, 32)
                      if not self.generator.render(data, min(width, MAX_IMAGE_SIZE)).clipped), None)
        name = instance.id if isinstance(instance, Instance) else instance.get("id", self.name)
        more = f" and {len(canvas.clipped) - 1} more" if len(canvas.clipped) > 1 else ""
        advice = f"a picture of it needs --image-size {min(holds, MAX_IMAGE_SIZE)} or more" if holds else \
            "it cannot be drawn whole at any width"
        raise UsageError(f"{name}: at --image-size {size} its picture would cut off {canvas.clipped[0][:40]!r}{more}; "
                         f"{advice} (the default {DEFAULT_SIZE} holds every task at every level)")

    def render(self, instance: Instance | Mapping, size: int = DEFAULT_SIZE, answer: str | None = None, *,
               whole: bool = False) -> bytes:
        """The instance as PNG bytes; with `answer`, the answer drawn over it, violations marked.
        `whole`: a picture a model is given, refused where text would fall off it (`picture`'s rule;
        a report's thumbnail or `mmnp show` may cut a title)."""
        data = _data(instance)
        if answer is None:
            return (self._whole(instance, size) if whole else self.generator.render(data, size)).png()
        verdict = self.verify(instance, answer)
        canvas = self.generator.render(data, size, verdict.solution, tuple(verdict.violations))
        return _with_caption(canvas, verdict).png()


_OPTIONAL = {"VERSION", "TRANSCRIPTION", "IMPORTS", "wrong_answers"}  # a task may go without (the suite needs wrong_answers)


# CP-SAT checks its deterministic limit between steps: it ran at most 0.07 s past it (1.07 s at 1 s, 0.0137 s at
# 0.01 s) over every task at easy, hard, L8 and L10
OVERSHOOT = (1.5, 0.02)


def _time_limit_mismatch(hardness: Mapping[str, Any], time_limit: float) -> str | None:
    """Whether the exact solver's recorded work contradicts `time_limit` (deterministic seconds):
    every search that stops unproven has run to the limit (`cpsat.solve` refuses any other stop),
    and no search runs far past it. What a record shows of a time limit edited in a manifest."""
    work, proven = hardness["deterministic_time"], hardness["proven"]
    if not proven and work < time_limit - 1e-4:  # the record rounds to 4 decimals
        return (f"its exact reference stopped unproven after {work} deterministic seconds, short of the --time-limit "
                f"{time_limit:g} the settings name")
    if work > OVERSHOOT[0] * time_limit + OVERSHOOT[1]:
        return f"its exact solver worked {work} deterministic seconds, beyond the --time-limit {time_limit:g} the settings name"
    return None


def _required(protocol: type) -> list[str]:
    """The names a task module must define: the protocol's, less the optional ones."""
    names = [n for n in vars(protocol).get("__annotations__", {})] + [
        n for n, v in vars(protocol).items() if callable(v) and not n.startswith("_")]
    return [n for n in dict.fromkeys(names) if n not in _OPTIONAL]


def _data(instance: Instance | Mapping) -> dict:
    if isinstance(instance, Instance):
        return instance.data
    try:
        return instance["instance"]
    except (KeyError, TypeError):
        raise TypeError("expected an Instance or an instance record (a dict with an 'instance' field)") from None


def _with_caption(canvas: Canvas, verdict: Verdict) -> Canvas:
    """The picture with the verdict in a banner below it, cut to the picture's width."""
    strip = 28
    out = Canvas(canvas.width, canvas.height + strip)
    out.image.paste(canvas.image, (0, 0))
    out.rect((0, canvas.height, canvas.width, canvas.height + strip), fill=GREEN if verdict.feasible else RED)
    text = verdict.summary()
    while len(text) > 4 and out.text_width(text, 14, bold=True) > canvas.width - 16:
        text = text[: int(len(text) * 0.9)].rstrip() + "..."
    out.text((8, canvas.height + strip / 2), text, size=14, colour=WHITE, anchor="lm", bold=True)
    return out
