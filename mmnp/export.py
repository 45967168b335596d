"""Datasets out to the tools researchers use, and back: Hugging Face `datasets`/the Hub, parquet, verl.

    mmnp export --data D --format hf --out X       # X/README.md (dataset card) + X/data/<split>-*.parquet
    datasets.load_dataset("X")                     # images decoded, one schema for all ten tasks
    mmnp.export.load_export("X")                   # back to Instances, with the integrity check

Every row holds the instance and its references as JSON strings (each task's instance has its own
shape, so no single Arrow struct fits all ten) beside typed common columns. Each parquet file's
schema metadata carries the source manifest, so an export (or one downloaded from the Hub) is
checked against the same benchmark hash as the folder it came from. `datasets` and `pyarrow`
are imported only here, and only when used.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import shlex
import sys
import tempfile
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from mmnp.core import Instance, content_hash
from mmnp.dataset import open_dataset
from mmnp.errors import DataError, RunError, UsageError
from mmnp.extras import require_extra
from mmnp.files import check_new_folder, write_whole_folder
from mmnp.integrity import NO_IMAGE, Digest, check_content, digest_line, image_name, record_line, validate_manifest
from mmnp.registry import get_task
from mmnp.releases import release_of

EXPORT_VERSION = 2  # 2: rows checked by the same content check as a dataset folder (manifest format 3)
META_KEY = b"mmnp"  # parquet schema metadata key holding the export's description
SPLIT_BY: dict[str, Callable[[Instance], str]] = {  # --split-by: the split an instance's row goes to
    "difficulty": lambda inst: inst.difficulty, "task": lambda inst: inst.task, "none": lambda inst: "test"}
LICENSE = "apache-2.0"
ROW_GROUP = 64  # rows per parquet row group: small groups keep image pages light for readers and the Hub viewer


COLUMNS = {  # the one schema of every export: column -> its `datasets` type
    "id": "string", "task": "string", "category": "string", "difficulty": "string", "seed": "int64",
    "hash": "string", "prompt": "string", "image_prompt": "string", "image": "image", "instance": "string",
    "reference": "string", "params": "string", "reference_objective": "float64", "best_objective": "float64",
    "level": "int32", "hardness": "string", "picture": "string",
}
DERIVED_COLUMNS = ("category", "reference_objective", "best_objective")  # copies of what a record says, for harnesses


def features():
    """The one schema of every export (a `datasets.Features`)."""
    from datasets import Features, Image, Value

    return Features({name: Image() if kind == "image" else Value(kind) for name, kind in COLUMNS.items()})


def to_row(inst: Instance, png: bytes) -> dict[str, Any]:
    """One export row: JSON strings for the task-shaped parts, typed columns for the rest."""
    dump = lambda obj: json.dumps(obj, ensure_ascii=False, separators=(",", ":"))  # noqa: E731
    return {
        "id": inst.id, "task": inst.task, "category": get_task(inst.task).category, "difficulty": inst.difficulty,
        "seed": inst.seed, "hash": inst.hash, "prompt": inst.prompt, "image_prompt": inst.image_prompt,
        "image": {"bytes": png, "path": inst.image or f"{inst.task}/images/{inst.id}.png"},
        "instance": dump(inst.data), "reference": dump(inst.reference), "params": dump(inst.params),
        "reference_objective": float(inst.reference_objective), "best_objective": float(inst.best_objective),
        "level": inst.level, "hardness": dump(inst.hardness), "picture": dump(inst.picture),
    }


def split_name(inst: Instance, split_by: str) -> str:
    return SPLIT_BY[split_by](inst)


# -- the formats ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExportOptions:
    """What shapes an export besides its format (`modality`, `reward`, `test_fraction`: verl's),
    and where a writer's warnings go (`notice`, one line each)."""

    split_by: str = "difficulty"
    modality: str = "text"
    reward: str = "quality"
    test_fraction: float = 0.1
    notice: Callable[[str], None] = field(default=lambda line: print(f"warning: {line}", file=sys.stderr),
                                          compare=False)


OPTION_FLAGS = {"split_by": "--split-by", "modality": "--modality", "reward": "--reward",
                "test_fraction": "--test-fraction"}  # the ExportOptions a format may take, by their flags
Png = Callable[[Instance], bytes]
Writer = Callable[[Path, list[Instance], Png, dict, ExportOptions], dict[str, int]]


@dataclass(frozen=True)
class ExportFormat:
    """One `--format`: its help, the writer that fills the (staging) folder and returns the rows
    per split, whether the Hub takes it (`--push-to-hub`), a check of its options, and the options
    it reads (`takes`: any other one given is refused, never silently ignored)."""

    help: str
    write: Writer
    hub: bool = False
    check: Callable[[ExportOptions], None] = lambda options: None
    takes: tuple[str, ...] = ("split_by",)


def _write_splits(layout: str) -> Writer:
    """A writer of one parquet file per split, at `layout` (formatted with the split's name)."""
    def write(folder: Path, instances: list[Instance], png: Png, meta: dict, options: ExportOptions,
              ) -> dict[str, int]:
        splits: dict[str, list[Instance]] = {}
        for inst in instances:
            splits.setdefault(split_name(inst, options.split_by), []).append(inst)
        for name, members in splits.items():
            _write_parquet(folder / layout.format(name=name), (to_row(i, png(i)) for i in members), meta)
        return {name: len(members) for name, members in splits.items()}
    return write


def _write_hf(folder: Path, instances: list[Instance], png: Png, meta: dict, options: ExportOptions,
              ) -> dict[str, int]:
    """The Hub layout: data/<split>-00000-of-00001.parquet and the dataset card."""
    counts = _write_splits("data/{name}-00000-of-00001.parquet")(folder, instances, png, meta, options)
    (folder / "README.md").write_text(dataset_card(meta, counts, install_line(folder, options.notice)),
                                      encoding="utf-8")
    return counts


def _check_verl(options: ExportOptions) -> None:
    if not 0 < options.test_fraction < 1:
        raise UsageError(f"--test-fraction {options.test_fraction}: give a number between 0 and 1, e.g. 0.1")


# -- writing --------------------------------------------------------------------------------------------


def export_dataset(data: str | Path, out: str | Path, format: str = "hf", split_by: str | None = None,
                   push_to_hub: str | None = None, private: bool = False, modality: str | None = None,
                   reward: str | None = None, test_fraction: float | None = None,
                   notice: Callable[[str], None] | None = None) -> dict:
    """Write the dataset at `data` to `out` and return a summary (files, rows per split).

    `hf`: a Hub-ready folder (dataset card + data/<split>-00000-of-00001.parquet), loadable with
    `datasets.load_dataset(out)` and pushed with `push_to_hub`. `parquet`: one <split>.parquet
    a split, for pandas/polars/duckdb. `verl`: train.parquet and test.parquet in verl's RL row
    format (`test_fraction` of the instances, stratified by task x difficulty: `_verl_test_ids`).
    An option the format does not read (None: not given) is refused; `notice` takes the writer's
    warnings (default: stderr). The folder appears whole or not at all; an existing non-empty
    `out` is refused.
    """
    if format not in FORMATS:
        raise UsageError(f"--format {format!r}: choose one of {', '.join(FORMATS)}")
    if push_to_hub and not FORMATS[format].hub:
        raise UsageError("--push-to-hub needs --format " + " or ".join(n for n, f in FORMATS.items() if f.hub)
                         + " (the Hub layout with its dataset card)")
    given = {name: value for name, value in (("split_by", split_by), ("modality", modality), ("reward", reward),
                                             ("test_fraction", test_fraction)) if value is not None}
    if unused := [OPTION_FLAGS[name] for name in given if name not in FORMATS[format].takes]:
        takes = ", ".join(OPTION_FLAGS[name] for name in FORMATS[format].takes) or "none of them"
        raise UsageError(f"{', '.join(unused)}: --format {format} does not use {'it' if len(unused) == 1 else 'them'} "
                         f"(it takes {takes}); drop {'it' if len(unused) == 1 else 'them'} or choose another --format")
    if given.get("split_by", "difficulty") not in SPLIT_BY:
        raise UsageError(f"--split-by {split_by!r}: choose one of {', '.join(SPLIT_BY)}")
    options = ExportOptions(**given, **({"notice": notice} if notice else {}))
    FORMATS[format].check(options)
    require_extra("hf", f"--format {format}")
    data, out = Path(data), Path(out)
    check_new_folder(out)
    dataset = open_dataset(data)
    manifest, identity = dataset.manifest, dataset.identity()
    instances = list(dataset.instances())
    images = "dataset" if manifest["arguments"].get("images", True) else "rendered at export"
    meta = {"format": "mmnp-export", "export_version": EXPORT_VERSION, "mmnp_version": _version(),
            "benchmark_hash": identity["benchmark_hash"], "references_hash": identity["references_hash"],
            "manifest": manifest, "split_by": options.split_by, "images": images}

    def png(inst: Instance) -> bytes:
        return dataset.image(inst) if inst.image else rendered_picture(inst)

    counts = write_whole_folder(out, lambda staging: FORMATS[format].write(staging, instances, png, meta, options))
    summary = {"out": str(out), "format": format, "rows": counts, "benchmark_hash": identity["benchmark_hash"]}
    if push_to_hub:
        push(out, push_to_hub, private)
        summary["pushed_to"] = push_to_hub
    return summary


def rendered_picture(inst: Instance) -> bytes:
    """The picture an export of a `--no-images` dataset holds: drawn from the (hashed) instance at the
    default size. Drawing is deterministic, so `Export.image` draws it again to check the row's picture."""
    return get_task(inst.task).render(inst)


def _draws_the_same(png: bytes, inst: Instance) -> bool:
    """Whether `png` shows what `inst` draws: the same decoded pixels (mode, size, pixel bytes, palette and
    transparency), not the same PNG bytes, since another Pillow or zlib encodes one drawing differently."""
    drawn = rendered_picture(inst)
    if png == drawn:
        return True
    from PIL import Image

    want = Image.open(io.BytesIO(drawn))
    try:
        got = Image.open(io.BytesIO(png))
        if got.format != "PNG" or (got.mode, got.size) != (want.mode, want.size):  # before decoding a big one
            return False
        got.load()
    except Exception:  # Pillow's errors have no common base (OSError, SyntaxError, DecompressionBombError, ...)
        return False
    return (got.tobytes(), got.getpalette(), got.info.get("transparency")) == (
        want.tobytes(), want.getpalette(), want.info.get("transparency"))


def _version() -> str:
    from mmnp import __version__

    return __version__


def _write_parquet(path: Path, rows: Iterable[dict], meta: dict) -> None:
    """Rows to one parquet file whose schema carries the `datasets` features and mmnp's description."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    feats = features()
    schema = feats.arrow_schema.with_metadata({
        b"huggingface": json.dumps({"info": {"features": feats.to_dict()}}).encode(),
        META_KEY: json.dumps(meta, sort_keys=True, separators=(",", ":")).encode()})
    path.parent.mkdir(parents=True, exist_ok=True)
    with pq.ParquetWriter(path, schema) as writer:
        for batch in _chunks(rows, ROW_GROUP):
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))


def _chunks(rows: Iterable[dict], size: int) -> Iterator[list[dict]]:
    batch = []
    for row in rows:
        batch.append(row)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def verl_features(modality: str):
    """verl's row schema (`to_verl_row`'s columns) as `datasets.Features`: every split is written
    with it, so an empty one still has its columns and types."""
    from datasets import Features, Value

    text = Value("string")
    columns = {"data_source": text, "prompt": [{"role": text, "content": text}], "ability": text,
               "reward_model": {"style": text, "ground_truth": text},
               "extra_info": {"index": Value("int64"), "split": text, "id": text, "task": text, "difficulty": text,
                              "reward": text}}
    return Features({**columns, **({"images": [{"bytes": Value("binary")}]} if modality == "image" else {})})


def _verl_test_ids(instances: list[Instance], fraction: float) -> set[str]:
    """The ids that go to test.parquet. Of the N instances, T = round(fraction x N) (half up; at
    least 1 and at most N - 1, since verl refuses an empty train or validation set) are shared by
    largest remainder among the tasks in proportion to their sizes, then each task's share among
    its difficulties the same way (ties go to the earlier in the dataset); a task x difficulty
    cell gives its first in content-hash order. Stratified, near the fraction, deterministic, and
    the same whatever the order of the rows."""
    if len(instances) < 2:
        raise UsageError(f"--format verl needs at least 2 instances (one for train.parquet, one for test.parquet); "
                         f"the dataset holds {len(instances)}: generate more with a larger --count")
    cells: dict[str, dict[str, list[Instance]]] = {}
    for inst in instances:
        cells.setdefault(inst.task, {}).setdefault(inst.difficulty, []).append(inst)
    total = min(max(math.floor(Fraction(str(fraction)) * len(instances) + Fraction(1, 2)), 1), len(instances) - 1)
    per_task = _apportion(total, {task: sum(map(len, by.values())) for task, by in cells.items()})
    return {inst.id for task, by in cells.items()
            for difficulty, n in _apportion(per_task[task], {d: len(m) for d, m in by.items()}).items()
            for inst in sorted(by[difficulty], key=lambda i: i.hash)[:n]}


def _apportion(total: int, sizes: dict[str, int]) -> dict[str, int]:
    """`total` shared among `sizes`' keys in proportion to their sizes, by largest remainder (each
    gets the floor of its quota, the largest remainders one more; ties keep `sizes`' order)."""
    quota = {key: Fraction(total * n, sum(sizes.values())) for key, n in sizes.items()}
    shares = {key: math.floor(q) for key, q in quota.items()}
    for key in sorted(quota, key=lambda key: shares[key] - quota[key])[:total - sum(shares.values())]:
        shares[key] += 1
    return shares


def _write_verl(folder: Path, instances: list[Instance], png: Png, meta: dict, options: ExportOptions,
                ) -> dict[str, int]:
    """train.parquet / test.parquet with verl's columns and schema (no mmnp description: verl rows
    are for training); test holds `_verl_test_ids`."""
    from datasets import Dataset

    from mmnp.trainers.rewards.verl import to_verl_row

    test_ids = _verl_test_ids(instances, options.test_fraction)
    features = verl_features(options.modality)
    counts = {}
    for split in ("train", "test"):
        members = [i for i in instances if (i.id in test_ids) == (split == "test")]
        rows = [to_verl_row(inst, options.modality, options.reward,
                            png=png(inst) if options.modality == "image" else None, index=index, split=split)
                for index, inst in enumerate(members)]
        columns = {name: [row[name] for row in rows] for name in features}
        Dataset.from_dict(columns, features=features).to_parquet(str(folder / f"{split}.parquet"))
        counts[split] = len(rows)
    return counts


FORMATS: dict[str, ExportFormat] = {  # `mmnp export --format`: its choices and help come from here
    "hf": ExportFormat("Hub folder with card", _write_hf, hub=True),
    "parquet": ExportFormat("a file per split", _write_splits("{name}.parquet")),
    "verl": ExportFormat("train/test parquet for verl", _write_verl, check=_check_verl,
                         takes=("modality", "reward", "test_fraction")),
}


def source_command(manifest: dict, out: str = "DATA", part: tuple[int, int] | None = None) -> str:
    """The command that rebuilds the source dataset into `out` (a shell word), from its manifest's
    arguments: its `mmnp generate` line (of one `part` K/N), or the `mmnp import` line with the
    files it read (published optima are in the records; `--optima` names them again)."""
    a = manifest["arguments"]
    if "import" in a:
        parts = [f"mmnp import {a['import']}", *map(shlex.quote, a["files"]), f"--out {out}"]
        parts += [f"--task {a['task']}"] if a.get("task") else []
        parts += ["--complement"] if a.get("complement") else []
        parts += [f"--relabel {a['relabel']}"] if a.get("relabel") is not None else []
        parts += ["--unit-costs"] if a.get("unit_costs") else []
    else:
        shard = f" --shard {part[0]}/{part[1]}" if part else ""
        parts = [f"mmnp generate{shard} --out {out}", f"--tasks {','.join(a['tasks'])}",
                 f"--difficulty {','.join(a['difficulties'])}", f"--count {a['count']}", f"--seed {a['seed']}"]
    limit = f"{a['time_limit']:g}"  # 10, not 10.0 ...
    if float(limit) != a["time_limit"]:  # ... but every digit where :g would round: the run's identity needs them
        limit = repr(float(a["time_limit"]))
    parts += [f"--image-size {a['image_size']}", f"--time-limit {limit}"]
    parts += [] if a.get("images", True) else ["--no-images"]
    parts += [] if a.get("optimal", True) else ["--no-optimal"]
    parts += [f"--param {shlex.quote(f'{k}={v}')}" for k, v in sorted(a.get("params", {}).items())]
    return " ".join(parts)


WHEEL_EPOCH = "315532800"  # SOURCE_DATE_EPOCH of the card's wheel (1980-01-01, zip's first date): the same bytes each build
LICENSE_FILES = ("LICEN[CS]E*", "COPYING*", "NOTICE*", "AUTHORS*")  # setuptools' default license_files


def install_line(folder: Path, notice: Callable[[str], None]) -> str:
    """The pip command that installs the mmnp that wrote an export. Installed from a source checkout
    (the usual developer install), its wheel is built into `folder` and installed from there, so the
    card's line works wherever the export goes (the Hub copy included); when that build fails, the
    export still succeeds, with a line for a source checkout and a `notice` saying why. Installed
    from a URL or a wheel file, that URL (PEP 610's direct_url.json); otherwise from the index."""
    import importlib.metadata

    version = _version()
    source = Path(__file__).resolve().parent.parent
    if (source / "pyproject.toml").is_file() and 'name = "mmnp"' in (source / "pyproject.toml").read_text():
        try:
            wheel = build_wheel(source, folder)
        except RunError as e:
            notice(f"the dataset card names no wheel: {e}")
            return (f"pip install .    # in a source checkout of mmnp {version} (its wheel could not be built at "
                    "export)")
        return (f"pip install ./{wheel.name}    # the wheel beside this card (a Hub copy: "
                "huggingface-cli download REPO --repo-type dataset --local-dir .)")
    direct = json.loads(importlib.metadata.distribution("mmnp").read_text("direct_url.json") or "null")
    if direct and "dir_info" not in direct:  # an archive or a VCS URL; a local folder would not travel
        vcs = direct.get("vcs_info")
        url = f"git+{direct['url']}@{vcs['commit_id']}" if vcs else direct["url"]
        return f'pip install "mmnp @ {url}"'
    return f"pip install mmnp=={version}"


def build_wheel(source: Path, folder: Path) -> Path:
    """mmnp's wheel built from the checkout `source` into `folder`, the same bytes each time: from a
    temporary copy of what the wheel holds (`wheel_sources`; the checkout is only read, no build/ or
    egg-info lands in it), without build isolation when setuptools is importable (so no index is
    asked), with SOURCE_DATE_EPOCH fixed and the files' modes normalised. RunError says why not."""
    import importlib.util
    import shutil
    import subprocess

    with tempfile.TemporaryDirectory(prefix="mmnp-wheel-") as tmp:
        tree, built = Path(tmp) / "src", Path(tmp) / "wheel"
        for rel in wheel_sources(source):
            if (source / rel).is_dir():
                shutil.copytree(source / rel, tree / rel, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".*"))
            else:
                (tree / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source / rel, tree / rel)
        for root, dirs, files in os.walk(tree):
            os.chmod(root, 0o755)
            for name in files:
                os.chmod(os.path.join(root, name), 0o644)
        # without setuptools here, pip's isolated build fetches it from the index
        local = ["--no-build-isolation"] if importlib.util.find_spec("setuptools") else []
        command = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *local, "-w", str(built), str(tree)]
        done = subprocess.run(command, capture_output=True, text=True, cwd=tmp,
                              env={**os.environ, "SOURCE_DATE_EPOCH": WHEEL_EPOCH})
        wheels = sorted(built.glob("mmnp-*.whl"))
        if done.returncode != 0 or len(wheels) != 1:
            lines = [line.strip() for line in (done.stderr or done.stdout).splitlines() if line.strip()]
            errors = [line for line in lines if line.startswith("ERROR:")]  # pip's own reason, not its closing note
            why = (errors or lines or [f"exit status {done.returncode}"])[-1]
            raise RunError(f"building mmnp's wheel from {source} failed ({' '.join(['pip wheel', *local])}): {why}")
        shutil.copyfile(wheels[0], folder / wheels[0].name)
    return folder / wheels[0].name


def wheel_sources(source: Path) -> list[str]:
    """What mmnp's wheel is built from, relative to the checkout `source`: pyproject.toml, its readme
    and license files, and the folders of the packages it lists ([tool.setuptools.package-dir], else
    the packages' top-level names; their package data lies inside them)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        raise RunError("reading pyproject.toml needs Python 3.11's tomllib") from None
    config = tomllib.loads((source / "pyproject.toml").read_text(encoding="utf-8"))
    project, setuptools = config.get("project", {}), config.get("tool", {}).get("setuptools", {})
    readme = project.get("readme")
    readme = readme.get("file") if isinstance(readme, dict) else readme
    folders = set(setuptools.get("package-dir", {}).values()) or {p.split(".")[0] for p in setuptools.get("packages", [])}
    if not folders or any(f in ("", ".") or not (source / f).is_dir() for f in folders):
        raise RunError(f"{source / 'pyproject.toml'}: its package folders {sorted(folders)} are not folders of the "
                       "checkout")
    licenses = {p.name for pattern in LICENSE_FILES for p in source.glob(pattern) if p.is_file()}
    return sorted({"pyproject.toml", *([readme] if readme else []), *licenses, *folders})


def dataset_card(meta: dict, counts: dict[str, int], install: str) -> str:
    """README.md with the YAML header the Hub and `datasets` read (configs, features, license)."""
    import yaml

    manifest = meta["manifest"]
    header = _card_header(meta, counts)
    tasks = ", ".join(manifest["counts"])
    table = "\n".join(f"| {name} | {n} |" for name, n in counts.items())
    return f"""---
{yaml.safe_dump(header, sort_keys=False, allow_unicode=True).rstrip()}
---

# MM-NP-Bench

Ten NP-hard optimisation tasks ({tasks}), each instance given as a text prompt and as a picture
with a shorter prompt, with reference objectives from a heuristic and an exact solver.
{manifest['total']} instances, split by {meta['split_by']}:

| split | rows |
|---|---|
{table}

## Integrity

Benchmark hash: `{meta['benchmark_hash']}`, references hash: `{meta['references_hash']}`.
{_coverage(meta)}

## How it was made

    {install}
    {source_command(manifest)}
    mmnp export --data DATA --format hf --split-by {meta['split_by']} --out OUT

with mmnp {manifest.get('mmnp_version', '?')} (export by mmnp {meta['mmnp_version']}); images: {meta['images']}.

## Columns

`instance`, `reference` (heuristic and optimal objective and solution) and `params` are JSON strings,
since each task's instance has its own shape. `image` is the rendered PNG. Score an answer with

    from mmnp.registry import get_task
    verdict = get_task(row["task"]).verify({{"task": row["task"], "instance": json.loads(row["instance"])}}, answer)

## License

Apache-2.0, like mmnp.
"""


def _coverage(meta: dict) -> str:
    """What the card's hashes cover, and how a reader checks the pictures, for this export's pictures."""
    if meta["images"] == "dataset":
        return """The benchmark hash covers every record but its references (instance, prompts, picture record)
and every picture's bytes; the references hash covers the heuristic and exact references. Both
are re-derived from the rows by `mmnp.export.load_export` (and `mmnp eval --data` on this
export), which refuses an export whose rows differ from the source manifest embedded here."""
    return """The source dataset was generated with `--no-images`, so neither hash covers a picture: the
benchmark hash covers every record but its references (instance, prompts), the references hash
the heuristic and exact references. Each picture here was drawn from its instance at export.
`mmnp.export.load_export` (and `mmnp eval --data` on this export) re-derives both hashes from the
rows, refusing an export whose rows differ from the source manifest embedded here. A picture is
drawn again from its checked instance the first time it is read (`Export.image`; text prompts read
none) and refused when its pixels differ (edited, or drawn by another mmnp or Pillow): rebuild the
dataset with the `mmnp generate` line below and read that, or use the text modality."""


def _card_header(meta: dict, counts: dict[str, int]) -> dict:
    """The dataset card's YAML header: license, tags, configs, `datasets`' info, mmnp's description."""
    from datasets import DatasetInfo, SplitDict, SplitInfo

    splits = SplitDict()
    for name, n in counts.items():
        splits.add(SplitInfo(name=name, num_examples=n))
    info = DatasetInfo(features=features(), splits=splits)._to_yaml_dict()
    header = {
        "license": LICENSE,
        "pretty_name": "MM-NP-Bench",
        "tags": ["mmnp", "combinatorial-optimization", "np-hard", "multimodal", "reasoning"],
        "task_categories": ["text-generation", "image-text-to-text"],
        "configs": [{"config_name": "default",
                     "data_files": [{"split": name, "path": f"data/{name}-*"} for name in counts]}],
        "dataset_info": info,
        # the whole description, manifest included: `push_to_hub` rewrites the parquet files
        # without their schema metadata, so a Hub copy is checked against this
        "mmnp": meta,
    }
    return header


def push(out: Path, repo: str, private: bool) -> None:
    """Upload an hf export: the data through `DatasetDict.push_to_hub`, then the dataset card
    (push_to_hub writes its own card; ours carries the hash and provenance). Its data files
    keep the data/<split>-* names the card's configs name."""
    import datasets
    from huggingface_hub import HfApi

    dd = datasets.load_dataset(str(out))
    try:
        dd.push_to_hub(repo, private=private)
        for name in ["README.md", *(w.name for w in out.glob("mmnp-*.whl"))]:  # the card, and the wheel it names
            HfApi().upload_file(path_or_fileobj=str(out / name), path_in_repo=name, repo_id=repo,
                                repo_type="dataset", commit_message=f"mmnp: {name}")
    except Exception as e:  # network, auth, permissions: the library's message says which
        raise RunError(f"pushing {out} to the Hub as {repo} failed: {e}; the export in {out} is complete, "
                       "fix the cause (e.g. `huggingface-cli login`) and rerun with --push-to-hub") from None


# -- reading back ---------------------------------------------------------------------------------------


@dataclass
class Export:
    """An export read back and checked: the instances, the source manifest, their pictures, and
    the identity derived from the rows (the same check as a dataset folder's)."""

    path: Path
    instances: list[Instance]
    manifest: dict
    images: dict[str, bytes]
    hashes: tuple[str, str]
    drawn: dict[str, str] = field(default_factory=dict)  # id -> its row, of each picture drawn at export
    _verdicts: dict[str, bool] = field(default_factory=dict, init=False, repr=False)  # id -> _draws_the_same

    @property
    def benchmark_hash(self) -> str:
        return self.hashes[0]

    def image(self, inst: Instance) -> bytes:
        """The instance's PNG. The source dataset's was checked against its digest when read back; one drawn
        at export (no hash covers it) is drawn again the first time it is asked for, so that a reader of
        the text alone does not draw every picture, and refused when its pixels differ."""
        png = self.images[inst.id]
        if inst.id in self.drawn:
            if inst.id not in self._verdicts:
                self._verdicts[inst.id] = _draws_the_same(png, inst)
            if not self._verdicts[inst.id]:
                raise DataError(f"{self.drawn[inst.id]}: its picture is not the one its instance draws (drawn at "
                                "export: the dataset has no pictures); the export was edited, or drawn by another "
                                "mmnp or Pillow: export it again from the dataset, or without it (a Hub copy) rebuild "
                                f"the dataset with `{source_command(self.manifest)}` (the card's line) and use --data DATA, or use the text "
                                "modality, which needs no picture")
        return png

    def identity(self) -> dict:
        """The dataset block of results.json: the source dataset's, as the rows re-derive it."""
        bench, refs = self.hashes
        return {"path": str(self.path if str(self.path).startswith("hf://") else Path(self.path).absolute()),
                "benchmark_hash": bench, "references_hash": refs,
                "preset": release_of(bench, refs), "modified": False, "content_hash": bench}


def load_export(path: str | Path) -> Export:
    """An `hf` or `parquet` export (a folder, a parquet file, or a Hub dataset `hf://owner/name`)
    as Instances, checked row by row with the same check as the dataset folder it came from:
    each row rebuilds its record line, whose digests, ids and shards, and the pictures' bytes,
    must be those the embedded source manifest lists, and derive its hashes. A picture drawn at
    export (a `--no-images` dataset: no digest lists it) is checked by `Export.image`, when asked for."""
    require_extra("hf", f"reading the export {path}")  # before any download

    text = str(path)
    path = _download(text.split(":", 1)[1].lstrip("/")) if text.startswith(("hf://", "hf:/")) else Path(text)
    if not path.exists():
        raise DataError(f"{path}: no such export folder or parquet file")
    files = sorted(p for p in (path.rglob("*.parquet") if path.is_dir() else [path])
                   if not any(part.startswith(".") for part in p.relative_to(path).parts))
    if not files:
        raise DataError(f"{path} holds no parquet files; export one with `mmnp export --data D --format hf --out {path}`")
    meta, rows = _read_parquet(path, files)
    if not isinstance(meta, dict) or meta.get("export_version") != EXPORT_VERSION:
        raise DataError(f"{path}: written by another mmnp export format ({(meta or {}).get('export_version')}, this "
                        f"mmnp reads {EXPORT_VERSION}); export the dataset again")
    manifest = validate_manifest(meta.get("manifest"), f"{path}: the source manifest")
    with_pictures = meta.get("images") == "dataset"
    instances, images, hashes, places = _checked_rows(path, manifest, rows, with_pictures)
    return Export(path, instances, manifest, images, hashes, {} if with_pictures else places)


def _read_parquet(path: Path, files: list[Path]) -> tuple[dict | None, list[tuple[Path, int, dict]]]:
    """(the export's description, (file, row number, row) of every row) from its parquet files:
    the description from their schema metadata, else from the folder's dataset card (a Hub copy)."""
    import pyarrow.parquet as pq

    card = _card_meta(path if path.is_dir() else path.parent)
    meta, rows = None, []
    for file in files:
        try:
            table = pq.read_table(file)
        except Exception as e:  # pyarrow's errors have no common base: a damaged or foreign file
            raise DataError(f"{file}: not a readable parquet file ({type(e).__name__}: {e})") from None
        raw = (table.schema.metadata or {}).get(META_KEY)
        if raw is None and card is None:
            raise DataError(f"{file} is not an mmnp export (neither its schema nor a README.md dataset card carries "
                            "mmnp's description); a verl export is for training, not for `load_export`")
        this = json.loads(raw) if raw is not None else card
        if meta is None:
            meta = this
        elif this.get("manifest") != meta.get("manifest"):
            raise DataError(f"{file} comes from another dataset than {files[0]}; keep one export per folder")
        for number, row in enumerate(table.to_pylist()):
            rows.append((file, number, row))
    return meta, rows


def _checked_rows(path: Path, manifest: dict, rows: list[tuple[Path, int, dict]], with_pictures: bool,
                  ) -> tuple[list[Instance], dict[str, bytes], tuple[str, str], dict[str, str]]:
    """The rows as Instances in the dataset's order, their pictures by id, the hashes they derive,
    after `check_content` found them to be what the source `manifest` lists, and each row's place
    by id (what a refusal of its picture names)."""
    instances, images, pngs, derived, places = [], {}, {}, [], {}
    shards: dict[tuple[str, str], list[Digest] | None] = {}
    for file, number, row in rows:
        where = f"{file} row {number} (id {row.get('id')!r})"
        inst = _row_instance(row, where, with_pictures)
        png = (row.get("image") or {}).get("bytes") or b""
        derived.append((where, inst, tuple(row.get(k) for k in DERIVED_COLUMNS)))
        digest = digest_line(record_line(inst), where)
        images[inst.id], places[inst.id] = png, where
        pngs[digest] = hashlib.sha256(png).hexdigest() if with_pictures else NO_IMAGE
        shard = (inst.task, inst.difficulty)
        if inst.difficulty not in manifest["counts"].get(inst.task, {}):
            raise DataError(f"{where}: a row of {inst.task}/{inst.difficulty}, which the source manifest does not "
                            "list; the export was edited")
        shards.setdefault(shard, []).append(digest)
        instances.append(inst)
    listed = [(t, d) for t, ds in manifest["counts"].items() for d in ds]
    problems, hashes = check_content(manifest, {s: shards.get(s) for s in listed},
                                     lambda t, d: f"{path}: {t}/{d}", pngs.__getitem__, f"{path}: its manifest")
    if problems:
        more = f" (and {len(problems) - 1} more differences)" if len(problems) > 1 else ""
        raise DataError(f"{problems[0]}{more}. The export differs from the dataset it was made from (edited or "
                        "damaged; a missing split too): export it again, or download it whole")
    for where, inst, columns in derived:  # what harnesses score from (lm-eval, lmms-eval) is what the record says
        if columns != tuple(to_row(inst, b"")[k] for k in DERIVED_COLUMNS):
            raise DataError(f"{where}: its {', '.join(DERIVED_COLUMNS)} columns are not what its record says; the "
                            "export was edited: export it again from the generated dataset")
    order = {s: n for n, s in enumerate(listed)}
    instances.sort(key=lambda i: (order[i.task, i.difficulty], int(i.id.rsplit("-", 1)[1])))
    return instances, images, hashes, places


def _row_instance(row: dict, where: str, with_pictures: bool) -> Instance:
    """The Instance one export row holds; its picture is found by id, as in a dataset folder."""
    if missing := [name for name in COLUMNS if name not in row and name not in ("image", "level")]:
        raise DataError(f"{where}: no {', '.join(missing)} column; the export is damaged: export it again")
    try:
        data = json.loads(row["instance"])
        loaded = {k: json.loads(row[k] or "null") for k in ("params", "reference", "hardness", "picture")}
    except (KeyError, TypeError, ValueError):
        raise DataError(f"{where}: a JSON column is missing or not JSON; the export is damaged: export it again") from None
    if not isinstance(row.get("id"), str) or not isinstance(row.get("task"), str):
        raise DataError(f"{where}: its id or task is not a text; the export is damaged: export it again")
    if content_hash(row["task"], data) != row["hash"]:
        raise DataError(f"{where}: the instance does not hash to its hash column {row['hash']}; the export was "
                        "edited or damaged: export it again from the generated dataset")
    return Instance(id=row["id"], task=row["task"], difficulty=row["difficulty"], seed=row["seed"],
                    params=loaded["params"], data=data, hash=row["hash"], prompt=row["prompt"],
                    image_prompt=row["image_prompt"], reference=loaded["reference"],
                    image=_picture_name(row["id"], where) if with_pictures else None, level=row.get("level"),
                    hardness=loaded["hardness"], picture=loaded["picture"])


def _picture_name(id: str, where: str) -> str:
    try:
        return image_name(id)
    except UsageError:
        raise DataError(f"{where}: {id!r} is not an instance id; the export was edited") from None


def _card_meta(folder: Path) -> dict | None:
    """The `mmnp` block of a dataset card's YAML header, if the folder has one."""
    import yaml

    try:
        text = (folder / "README.md").read_text(encoding="utf-8")
        header = yaml.safe_load(text.split("---\n")[1]) if text.startswith("---\n") else None
    except (OSError, IndexError, yaml.YAMLError):
        return None
    meta = header.get("mmnp") if isinstance(header, dict) else None
    return meta if isinstance(meta, dict) and {"benchmark_hash", "manifest"} <= set(meta) else None


def _download(repo: str) -> Path:
    """A Hub dataset `owner/name`, downloaded (parquet files and card only) to the local cache."""
    require_extra("hf", f"reading the Hub dataset {repo}")
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(repo, repo_type="dataset", allow_patterns=["*.parquet", "README.md"]))
    except Exception as e:  # offline, unknown repo, no access: the library's message says which
        reason = " ".join(str(e).split())[:300]
        raise RunError(f"asking the Hub for the dataset {repo} failed: {type(e).__name__}: {reason}") from None


__all__ = ["FORMATS", "Export", "ExportFormat", "ExportOptions", "export_dataset", "features", "load_export", "to_row"]
