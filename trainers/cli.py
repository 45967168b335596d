"""`mmnp train`, `mmnp tiny-model` and `mmnp disa`: the training layer's commands."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from typer.core import TyperCommand

from mmnp.clikit import console, progress_bar, user_errors
from mmnp.errors import UsageError

app = typer.Typer()


def _train_command(config: Optional[Path] = None, **flags):
    """Train with an algorithm of trainers/algorithms/ (GRPO, DMPO, ProGRPO, FlowRL, DISA) on
    MM-NP-Bench, on TRL's GRPOTrainer.

    Every flag is also a key of the YAML --config file (flags win); an algorithm's own flags
    (e.g. --dmpo-lambda) apply with its --algo only. Several GPUs:
    `accelerate launch -m mmnp train ...`.
    """
    try:
        from mmnp.trainers.spec import TrainSpec
        from mmnp.trainers.train import build_trainer
    except ImportError as e:
        raise UsageError(f"training needs the train extra ({e}): pip install 'mmnp[train]'") from None
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
    """`mmnp train` with one flag per algorithm option, added when the command is used (help
    or run), so listing mmnp's commands imports neither torch nor TRL."""

    _added = False

    def get_params(self, ctx):
        if not self._added:
            self._added = True
            try:
                from mmnp.trainers.algorithms import option_flags
            except ImportError:  # the base install: the shared flags only, and a clear line when run
                return super().get_params(ctx)
            self.params.extend(_option_params(option_flags()))
        return super().get_params(ctx)


def _option_params(flags: dict) -> list:
    """Typer's own parameters for the algorithm options (built through a throwaway command),
    each stashing its value in the context instead of passing it to the command."""
    import inspect

    panel = "Algorithm options (with their --algo only)"
    params = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=Optional[kind],
                                default=typer.Option(None, f"--{name.replace('_', '-')}", rich_help_panel=panel,
                                                     help=f"{help_text} [default: {default}]"))
              for name, (kind, default, help_text, _) in flags.items()]

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
    try:
        from mmnp.trainers.sft import SFTSpec, sft
    except ImportError as e:
        raise UsageError(f"SFT needs the train extra ({e}): pip install 'mmnp[train]'") from None
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
    try:
        from mmnp.tiny_model import write_tiny_model
    except ImportError as e:
        raise UsageError(f"tiny models need the train extra ({e}): pip install 'mmnp[train]'") from None
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
    reward: str = typer.Option("quality", help="quality, feasible or shaped (train with the same)."),
    loglik: str = typer.Option("sum", help="sum (log pi(o|q): the tilted target is a distribution) or mean "
                                           "(length-normalised: no normalised target; see trainers/disa/estimate.py)."),
    max_tokens: int = typer.Option(1024),
    seed: int = typer.Option(2, help="Prompt generation seed (away from the test set's)."),
    engine: str = typer.Option("transformers", help="Draw proposals with transformers or vllm (GPU)."),
) -> None:
    """Importance-sampling labels log Z_IS(q), one per prompt, with their ESS (resumable)."""
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
    from mmnp.trainers.disa.anchor import fit

    config = fit(folder, hidden=hidden, epochs=epochs)
    console.print(f"g_psi: held-out MSE {config['held_out_mse']:.4g} (mean predictor {config['held_out_baseline_mse']:.4g}),"
                  f" train MSE {config['train_mse']:.4g}, {config['n_train']} train / {config['n_held_out']} held-out "
                  f"prompts; calibration plot {folder / 'calibration.png'}", highlight=False)
