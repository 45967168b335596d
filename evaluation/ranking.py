"""Which runs a leaderboard ranks together: a ranking compares runs on the same data, asked under the
same protocol, only.

Runs are grouped by dataset (its benchmark hash and references hash, or its own content hash when
it was evaluated modified on purpose) and by protocol (`runs.Protocol`: samples n, feedback rounds,
sampling settings, system prompt, the backend options that shape a sample), each ranking with its own
tables under a heading naming both;
`mix_datasets` ranks runs on different data together (said so above it), never runs under different
protocols. Runs that are not complete (failed samples, instances without samples) are left out with a
line saying which, or shown marked with `include_incomplete`; runs whose numbers are not what their
samples earn (`Run.unverified`) likewise, with `include_unverified`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from mmnp.evaluation.runs import Dataset, Protocol, Run

ANSWERS_UNCHECKED = "answers not verified: data not at hand"  # the mark of a run counted on its stored verdicts


@dataclass
class Ranking:
    """Runs ranked together: one protocol, and one dataset or several with `mix_datasets`."""

    runs: list[Run]
    dataset: Dataset | None  # None: mixed datasets
    protocol: Protocol
    notes: list[str] = field(default_factory=list)

    def heading(self) -> str:
        data = ("MIXED datasets (--mix-datasets): runs on different data ranked together" if self.dataset is None
                else self.dataset.describe())
        return f"{data} · {self.protocol.describe()}"


@dataclass
class Board:
    """What a report shows: the rankings, and one line per run or folder it does not show."""

    rankings: list[Ranking]
    left_out: list[str]
    modality: str | None

    @classmethod
    def build(cls, runs: list[Run], problems: list[str] = (), modality: str | None = None,
              mix_datasets: bool = False, include_incomplete: bool = False,
              include_unverified: bool = False) -> Board:
        """Leave out unverified and incomplete runs (unless asked to show them marked), rank the rest by
        dataset and protocol, and label runs that share a model name with their folders."""
        _check_coverage(runs)
        left_out = list(problems)
        shown = []
        for run in runs:
            incomplete = run.incomplete()
            if run.unverified and not include_unverified:
                left_out.append(f"left out {run.model} ({run.folder}): {run.refusal}" + (
                    " (--include-unverified shows it marked, with the numbers its samples earn)"
                    if run.shows_anything() else ""))
            elif incomplete and not include_incomplete:
                left_out.append(f"left out {run.model} ({run.folder}): {incomplete}; run the same `mmnp eval` command "
                                "again to retry, or pass --include-incomplete to show it marked")
            elif not run.shows_anything():  # nothing to show, marked or not: a table of "(no results)" is no report
                left_out.append(f"left out {run.model} ({run.folder}): it answered no sample, so it has no figure to "
                                "show; run the same `mmnp eval` command again once what stopped it is fixed")
            else:
                shown.append(run)
        by_protocol: dict[str, dict[str, list[Run]]] = {}
        for run in shown:
            # a run whose data is unknown cannot be shown to match any other
            key = run.dataset.key if run.dataset.known else f"unknown:{run.folder}"
            by_protocol.setdefault(run.protocol.key, {}).setdefault(key, []).append(run)
        rankings = []
        for by_key in by_protocol.values():
            first = next(iter(by_key.values()))[0]
            if mix_datasets and len(by_key) > 1:
                rankings.append(Ranking([r for rs in by_key.values() for r in rs], None, first.protocol, [
                    f"{len(by_key)} datasets: " + "; ".join(f"{rs[0].dataset.short()} ({', '.join(r.model for r in rs)})"
                                                            for rs in by_key.values())]))
            else:
                rankings.extend(Ranking(rs, rs[0].dataset, rs[0].protocol) for rs in by_key.values())
        for ranking in rankings:
            names = [r.model for r in ranking.runs]
            for r in ranking.runs:
                r.label = f"{r.model} ({r.folder})" if names.count(r.model) > 1 else r.model
            legacy = [r.label for r in ranking.runs if not r.dataset.recorded]
            if legacy:
                ranking.notes.append(f"written by an older mmnp that did not record whether the data was checked or "
                                     f"modified: {', '.join(legacy)}")
            unsent = [f"{r.label} ({r.data_note})" for r in ranking.runs if r.verified == "answers" and r.data_note]
            if unsent:
                ranking.notes.append(f"answers verified again, some messages not checkable: {'; '.join(unsent)}")
            unchecked = [f"{r.label} ({r.data_note})" for r in ranking.runs if r.verified == "samples"]
            if unchecked:
                ranking.notes.append("numbers recomputed from the verdicts samples.jsonl stores, but the answers not "
                                     f"verified again, their data not being at hand: {'; '.join(unchecked)}")
        return cls(rankings, left_out, modality)

    @property
    def mixed(self) -> bool:
        return any(ranking.dataset is None for ranking in self.rankings)


def _covered(run: Run) -> int:
    """How many instances the run's scores cover (the most over its modalities)."""
    return max((block["overall"]["instances"] for m, block in run.results["metrics"].items()
                if m in run.modalities()), default=0)


def _check_coverage(runs: list[Run]) -> None:
    """Mark unverified a complete run, checked on its samples alone, that covers another number of
    instances than a complete run verified on the same data (or fewer than another such run, where none
    is): it cannot be a run on all of that data, whatever its dataset block says (a block copied from
    a full run onto a few instances, with the data not at hand to count them)."""
    by_key: dict[str, list[Run]] = {}
    for run in runs:
        if run.dataset.known and run.verified in ("answers", "samples") and run.incomplete() is None:
            by_key.setdefault(run.dataset.key, []).append(run)
    for group in by_key.values():
        proven = [r for r in group if r.verified == "answers"]  # counted on the data itself
        reference = max(proven or group, key=_covered)
        for run in group:
            if run.verified == "samples" and (_covered(run) != _covered(reference) if proven
                                              else _covered(run) < _covered(reference)):
                run.unverified = "covers another number of instances than its dataset holds"
                run.refusal = (f"{run.folder}: its samples answer {_covered(run)} instances, {reference.folder} "
                               f"answers {_covered(reference)} on the same dataset: it is not a run on the dataset its "
                               "results.json names; evaluate it on the whole dataset, or with --tasks/--limit, which "
                               "record the part it covers")
                run.verified, run.checked = "no", f"UNVERIFIED: {run.unverified}"


def marks(run: Run, modality: str | None = None) -> list[str]:
    """What a row of the run says beside its name: unverified, answers not verified again (its data not at
    hand: its numbers are what the verdicts samples.jsonl stores give, which an edit made consistent would
    pass), incomplete, answers cut short, images not shown to reach the model."""
    found = [f"UNVERIFIED: {run.unverified}" if run.unverified else None,
             ANSWERS_UNCHECKED if run.verified == "samples" else None, run.incomplete(), run.cut_answers(),
             run.image_warning() if modality == "image" else None]
    return [mark for mark in found if mark]


def rows(ranking: Ranking, modality: str | None) -> Iterator[tuple[Run, str, dict, str]]:
    """(run, modality, its metrics, the row's model cell with any marks) of each row a table shows."""
    for run in ranking.runs:
        for m in run.modalities():
            if modality is None or m == modality:
                yield run, m, run.results["metrics"][m], marked(run, m)


def marked(run: Run, modality: str | None = None) -> str:
    """The run's name as every row showing its numbers gives it: its label and its marks."""
    return run.label + "".join(f" ({mark})" for mark in marks(run, modality))
