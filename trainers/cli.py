"""`mmnp train`, `mmnp tiny-model` and `mmnp disa`: the training layer's commands."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from mmnp.clikit import console, progress_bar, user_errors

app = typer.Typer()


def _train_command(config: Optional[Path] = None, **flags):
    """Train with GRPO, DMPO, ProGRPO, FlowRL or DISA on MM-NP-Bench (TRL's GRPOTrainer).

    Every flag is also a key of the YAML --config file (flags win). Several GPUs:
    `accelerate launch -m mmnp train ...`.
    """
    try:
        from mmnp.trainers.spec import TrainSpec
        from mmnp.trainers.train import build_trainer
    except ImportError as e:
        raise ValueError(f"training needs the train extra ({e}): pip install 'mmnp[train]'") from None
    spec = TrainSpec.merged(config, flags)
    trainer = build_trainer(spec, console)
    return spec, trainer


def _train_run(**kwargs) -> None:
    spec, trainer = user_errors(_train_command)(**kwargs)  # mistakes in the settings: one red line
    from mmnp.trainers.train import train

    out = train(trainer, spec)  # errors while training keep their traceback
    console.print(f"[green]saved[/] {out}; evaluate it with: mmnp eval --model hf:{out} --data DATA", highlight=False)


def _register_train() -> None:
    """`mmnp train` takes one flag per TrainSpec field, generated so flags and YAML keys never drift."""
    import inspect

    from mmnp.trainers.spec import TRAIN_FIELDS

    params = [inspect.Parameter("config", inspect.Parameter.KEYWORD_ONLY, annotation=Optional[Path],
                                default=typer.Option(None, help="YAML file of settings (keys as the flags, with _)."))]
    for name, kind, help_text in TRAIN_FIELDS:
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=Optional[kind],
                                        default=typer.Option(None, f"--{name.replace('_', '-')}", help=help_text)))

    def command(**kwargs):
        return _train_run(**kwargs)

    command.__signature__ = inspect.Signature(params)  # typer reads the options from here
    command.__doc__ = _train_command.__doc__
    app.command("train")(command)


_register_train()


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
        raise ValueError(f"tiny models need the train extra ({e}): pip install 'mmnp[train]'") from None
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
    loglik: str = typer.Option("mean", help="mean (length-normalised) or sum log-likelihoods."),
    max_tokens: int = typer.Option(1024),
    seed: int = typer.Option(2, help="Prompt generation seed (away from the test set's)."),
    engine: str = typer.Option("transformers", help="Draw proposals with transformers or vllm (GPU)."),
) -> None:
    """Importance-sampling labels log Z_IS(q), one per prompt, with their ESS (resumable)."""
    from mmnp.trainers.disa import EstimateSpec, estimate

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
    from mmnp.trainers.disa import fit

    config = fit(folder, hidden=hidden, epochs=epochs)
    console.print(f"g_psi: held-out MSE {config['held_out_mse']:.4g} (mean predictor {config['held_out_baseline_mse']:.4g}),"
                  f" train MSE {config['train_mse']:.4g}, {config['n_train']} train / {config['n_held_out']} held-out "
                  f"prompts; calibration plot {folder / 'calibration.png'}", highlight=False)
