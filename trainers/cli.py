"""`mmnp train`, `mmnp tiny-model` and `mmnp disa`: the training layer's commands."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer
from typer.core import TyperCommand

from mmnp.clikit import console, progress_bar, user_errors
from mmnp.errors import MMNPError
from mmnp.extras import require_extra

app = typer.Typer()


def _train_command(config: Optional[Path] = None, **flags):
    """Train a model on MM-NP-Bench with an algorithm of the registry (--algo), on TRL's GRPOTrainer.

    Every flag is also a key of the YAML --config file (flags win); `mmnp train --algo NAME --help`
    adds that algorithm's own flags (e.g. --dmpo-lambda), which apply with its --algo only.
    Several GPUs: `accelerate launch -m mmnp train ...`.
    """
    require_extra("train", "training")
    from mmnp.trainers.spec import TrainSpec
    from mmnp.trainers.train import build_trainer

    spec = TrainSpec.merged(config, flags)
    trainer = build_trainer(spec, console)
    return spec, trainer


def _train_run(**kwargs) -> None:
    spec, trainer = user_errors(_train_command)(**kwargs)  # mistakes in the settings: one red line
    from mmnp.trainers.train import train

    out = train(trainer, spec)  # errors while training keep their traceback
    console.print(f"[green]saved[/] {out}; evaluate it with: mmnp eval --model hf:{out} --data DATA", highlight=False)


_OPTIONS = "mmnp.algorithm_options"


class _TrainCommand(TyperCommand):
    """`mmnp train`: the shared flags, plus the own flags of the one algorithm that --algo (or the
    --config file's `algo`, or the default for a run) names, added when the command is used.
    The choices of --algo and --reward are read from their registries then, without importing
    any plug-in, so listing mmnp's commands or `mmnp train --help` imports neither torch nor TRL,
    and a broken plug-in breaks only `--algo` (or `--reward`) of its own name."""

    _shared: list | None = None
    _algo = "grpo"
    _problem: str | None = None  # why the chosen algorithm's flags could not be added

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        from mmnp.trainers.spec import TrainSpec

        if self._shared is None:
            self._shared = list(self.params)
        named = _algo_named(args)
        self._algo = named or TrainSpec.algo
        help_only = named is None and "--help" in args  # plain `mmnp train --help` imports no algorithm
        self.params = self._shared + ([] if help_only else self._algorithm_params())
        _fill_choices(self.params)
        try:
            return super().parse_args(ctx, args)
        except Exception as e:  # click's NoSuchOption (typer vendors click: matched by its fields)
            if not (getattr(e, "option_name", None) and hasattr(e, "possibilities")):
                raise
            own = ", ".join(p.opts[0] for p in self.params[len(self._shared):]) or "none"
            close = f" (did you mean {', '.join(e.possibilities)}?)" if e.possibilities else ""
            ctx.fail(f"No such option: {e.option_name}{close}; it is not a setting of --algo {self._algo} "
                     f"(its own: {own}); `mmnp train --algo NAME --help` lists an algorithm's own")

    def _algorithm_params(self) -> list:
        self._problem = None
        try:
            from mmnp.trainers.algorithms import option_flags
        except ImportError:  # the base install: the shared flags only, and a clear line when run
            return []
        try:
            return _option_params(self._algo, option_flags(self._algo))
        except ImportError as e:
            self._problem = f"training needs the train extra ({e}): pip install 'mmnp[train]'"
        except MMNPError as e:  # an unknown or broken algorithm: said in the help, and by the run itself
            self._problem = str(e.args[0] if e.args else e)
        return []

    def format_help(self, ctx: Any, formatter: Any) -> None:
        from mmnp.trainers.algorithms import REGISTRY

        plugins = [f"{e.name} ({e.origin})" for e in REGISTRY.entries().values() if e.distribution]
        lines = ([f"Plug-in algorithms: {', '.join(plugins)}."] if plugins else []) + \
            ([self._problem] if self._problem else []) + REGISTRY.problems()
        self.epilog = "\n\n".join(lines) or None
        return super().format_help(ctx, formatter)


def _algo_named(args: list[str]) -> str | None:
    """The algorithm the command line names: --algo, else the --config file's `algo`, else None.
    An unreadable config is left to the run, which says what is wrong with it."""
    import yaml

    named, config = _flag_value(args, "--algo"), _flag_value(args, "--config")
    if named is None and config is not None:
        try:
            loaded = yaml.safe_load(Path(config).read_text())
        except (OSError, yaml.YAMLError):
            loaded = None
        named = loaded.get("algo") if isinstance(loaded, dict) else None
    return None if named is None else str(named)


def _flag_value(args: list[str], flag: str) -> str | None:
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None


def _fill_choices(params: list) -> None:
    """--algo's and --reward's help name every choice their registries hold (no plug-in imported)."""
    from mmnp.trainers.algorithms import algorithm_names
    from mmnp.trainers.rewards import describe_rewards

    for param in params:
        if param.name == "algo":
            param.help = f"The algorithm: {', '.join(algorithm_names())} (`mmnp train --algo NAME --help` adds " \
                         "its own options)."
        elif param.name == "reward":
            param.help = f"The reward: {describe_rewards()}."


def _option_params(algo: str, flags: dict) -> list:
    """Typer's own parameters for an algorithm's options (built through a throwaway command),
    each stashing its value in the context instead of passing it to the command."""
    import inspect

    panel = f"Options of --algo {algo}"
    params = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=Optional[kind],
                                default=typer.Option(None, f"--{name.replace('_', '-')}", rich_help_panel=panel,
                                                     help=help_text, show_default=str(default)))
              for name, (kind, default, help_text) in flags.items()]

    def options(**kwargs):
        """Algorithm options."""

    options.__signature__ = inspect.Signature(params)
    holder = typer.Typer()
    holder.command()(options)
    built = [p for p in typer.main.get_command(holder).params if p.name in flags]
    for param in built:
        param.expose_value = False
        param.callback = _stash_option
    return built


def _stash_option(ctx, param, value):
    if value is not None:
        ctx.meta.setdefault(_OPTIONS, {})[param.name] = value
    return value


def _register_train() -> None:
    """`mmnp train` takes one flag per TrainSpec field, generated so flags and YAML keys never drift."""
    import inspect

    from mmnp.trainers.spec import TRAIN_FIELDS

    params = [inspect.Parameter("config", inspect.Parameter.KEYWORD_ONLY, annotation=Optional[Path],
                                default=typer.Option(None, help="YAML file of settings (keys as the flags, with _)."))]
    for name, kind, help_text in TRAIN_FIELDS:
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=Optional[kind],
                                        default=typer.Option(None, f"--{name.replace('_', '-')}", help=help_text)))

    params.insert(0, inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context))

    def command(ctx: typer.Context, **kwargs):
        return _train_run(**kwargs, **ctx.meta.get(_OPTIONS, {}))

    command.__signature__ = inspect.Signature(params)  # typer reads the options from here
    command.__doc__ = _train_command.__doc__
    app.command("train", cls=_TrainCommand)(command)


_register_train()


@app.command("sft")
@user_errors
def sft_command(
    model: str = typer.Option(..., help="The model to distil into (path or hub id)."),
    out: Path = typer.Option(..., "--out", "-o", help="Folder for the fine-tuned model (then: mmnp train --model DIR)."),
    tasks: str = typer.Option("all", help="Comma-separated tasks, or all."),
    difficulty: str = typer.Option("easy,medium", help="Comma-separated difficulties."),
    modality: str = typer.Option("text", help="text, or image (vision-language models)."),
    count: int = typer.Option(256, help="Instances per task and difficulty."),
    params: Optional[str] = typer.Option(None, help="Generator overrides, e.g. n=4 (smaller instances)."),
    seed: int = typer.Option(3, help="Generation seed (keep it away from the test set's and RL's)."),
    max_steps: int = typer.Option(300),
    batch_size: int = typer.Option(8),
    learning_rate: float = typer.Option(1e-4),
    max_length: int = typer.Option(2048, help="Token limit of prompt + answer."),
    image_size: int = typer.Option(768, help="Rendered image height for --modality image."),
) -> None:
    """Supervised cold start: distil the best reference solutions into a model (TRL's SFTTrainer)."""
    require_extra("train", "SFT")
    from mmnp.trainers.sft import SFTSpec, sft

    path = sft(SFTSpec(model=model, out=str(out), tasks=tasks, difficulty=difficulty, modality=modality, count=count,
                       params=params, seed=seed, max_steps=max_steps, batch_size=batch_size,
                       learning_rate=learning_rate, max_length=max_length, image_size=image_size))
    console.print(f"[green]saved[/] {path}; continue with: mmnp train --model {path} ...", highlight=False)


@app.command("tiny-model")
@user_errors
def tiny_model(
    out: Path = typer.Option(..., "--out", "-o", help="Folder to write the model to."),
    vision: bool = typer.Option(False, help="A Qwen2-VL-style vision-language model instead of a text model."),
    warm_steps: int = typer.Option(100, help="Supervised steps on reference answers, so answers parse sometimes."),
    seed: int = typer.Option(0),
) -> None:
    """Build a tiny Qwen2 / Qwen2-VL model with a locally trained tokenizer (no download)."""
    require_extra("train", "tiny models")
    from mmnp.trainers.tiny_model import write_tiny_model

    path = write_tiny_model(out, vision=vision, seed=seed, warm_steps=warm_steps)
    console.print(f"[green]wrote[/] {'vision-language' if vision else 'text'} model to {path}")


disa_app = typer.Typer(help="DISA: estimate log Z offline, fit its regressor, then `mmnp train --algo disa`.",
                       no_args_is_help=True)
app.add_typer(disa_app, name="disa")


@disa_app.command("estimate")
@user_errors
def disa_estimate(
    ref: str = typer.Option(..., help="The reference model pi_ref (the policy's starting point)."),
    proposal: str = typer.Option(..., help="The proposal (teacher) model p_T that draws the samples."),
    out: Path = typer.Option(..., "--out", "-o", help="Folder for labels.jsonl and estimate.json."),
    tasks: str = typer.Option("all"),
    difficulty: str = typer.Option("easy,medium"),
    prompts: int = typer.Option(2000, help="Prompts to label, spread over tasks and difficulties."),
    samples: int = typer.Option(16, help="Proposals per prompt (N)."),
    beta: float = typer.Option(15.0, help="Tilt beta of the target pi_ref exp(beta r)."),
    reward: str = typer.Option("quality", help="A reward's name, as --reward of `mmnp train` (train with the same)."),
    loglik: str = typer.Option("sum", help="sum (log pi(o|q): the tilted target is a distribution) or mean "
                                           "(length-normalised: no normalised target; see trainers/disa/estimate.py)."),
    max_tokens: int = typer.Option(1024),
    seed: int = typer.Option(2, help="Prompt generation seed (away from the test set's)."),
    engine: str = typer.Option("transformers", help="Draw proposals with transformers or vllm (GPU)."),
) -> None:
    """Importance-sampling labels log Z_IS(q), one per prompt, with their ESS (resumable)."""
    require_extra("train", "DISA's estimate")
    from mmnp.trainers.disa.estimate import EstimateSpec, estimate

    spec = EstimateSpec(ref=ref, proposal=proposal, tasks=tasks, difficulty=difficulty, prompts=prompts,
                        samples=samples, beta=beta, seed=seed, max_tokens=max_tokens, reward=reward, loglik=loglik,
                        engine=engine)
    with progress_bar() as bar:
        job = bar.add_task("estimating log Z", total=None, rate="")
        estimate(spec, out, progress=lambda done, total: bar.update(job, completed=done, total=total))
    console.print(f"[green]wrote[/] {out / 'labels.jsonl'}; next: mmnp disa fit {out}")


@disa_app.command("fit")
@user_errors
def disa_fit(
    folder: Path = typer.Argument(..., help="The folder of `mmnp disa estimate`."),
    hidden: int = typer.Option(64, help="Width of the regressor MLP."),
    epochs: int = typer.Option(500),
) -> None:
    """Fit and freeze g_psi(q); report its held-out error and save a calibration plot."""
    require_extra("train", "DISA's fit")
    from mmnp.trainers.disa.anchor import fit

    config = fit(folder, hidden=hidden, epochs=epochs)
    console.print(f"g_psi: held-out MSE {config['held_out_mse']:.4g} (mean predictor {config['held_out_baseline_mse']:.4g}),"
                  f" train MSE {config['train_mse']:.4g}, {config['n_train']} train / {config['n_held_out']} held-out "
                  f"prompts; calibration plot {folder / 'calibration.png'}", highlight=False)
