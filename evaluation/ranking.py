"""Which runs a leaderboard ranks together: a ranking compares runs on the same data only.

Runs are grouped by dataset (its benchmark hash and references hash, or its own content hash when
it was evaluated modified on purpose), each ranking with its own tables and the hash above them,
unless `mix_datasets` asks for one ranking of everything (said so above it). Runs that are not
complete (failed samples, instances without samples) are left out with a line saying which, or
shown marked with `include_incomplete`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from mmnp.evaluation.runs import Dataset, Run


@dataclass
class Ranking:
    """Runs ranked together: one dataset, or several with `mix_datasets`."""

    runs: list[Run]
    dataset: Dataset | None  # None: mixed datasets
    notes: list[str] = field(default_factory=list)

    def heading(self) -> str:
        if self.dataset is None:
            return "MIXED datasets (--mix-datasets): runs on different data ranked together"
        return self.dataset.describe()


@dataclass
class Board:
    """What a report shows: the rankings, and one line per run or folder it does not show."""

    rankings: list[Ranking]
    left_out: list[str]
    modality: str | None

    @classmethod
    def build(cls, runs: list[Run], problems: list[str] = (), modality: str | None = None,
              mix_datasets: bool = False, include_incomplete: bool = False) -> Board:
        """Leave out incomplete runs (unless `include_incomplete`), rank the rest by dataset, and label
        runs that share a model name with their folders."""
        left_out = list(problems)
        shown = []
        for run in runs:
            reason = run.incomplete()
            if reason and not include_incomplete:
                left_out.append(f"left out {run.model} ({run.folder}): {reason}; run the same `mmnp eval` command "
                                "again to retry, or pass --include-incomplete to show it marked")
            else:
                shown.append(run)
        by_key: dict[str, list[Run]] = {}
        for run in shown:
            # a run whose data is unknown cannot be shown to match any other
            key = run.dataset.key if run.dataset.known else f"unknown:{run.folder}"
            by_key.setdefault(key, []).append(run)
        if mix_datasets and len(by_key) > 1:
            rankings = [Ranking(shown, None, [f"{len(by_key)} datasets: " + "; ".join(
                f"{rs[0].dataset.short()} ({', '.join(r.model for r in rs)})" for rs in by_key.values())])]
        else:
            rankings = [Ranking(rs, rs[0].dataset) for rs in by_key.values()]
        for ranking in rankings:
            names = [r.model for r in ranking.runs]
            for r in ranking.runs:
                r.label = f"{r.model} ({r.folder})" if names.count(r.model) > 1 else r.model
            legacy = [r.label for r in ranking.runs if not r.dataset.recorded]
            if legacy:
                ranking.notes.append(f"written by an older mmnp that did not record whether the data was checked or "
                                     f"modified: {', '.join(legacy)}")
        return cls(rankings, left_out, modality)

    @property
    def mixed(self) -> bool:
        return any(ranking.dataset is None for ranking in self.rankings)


def rows(ranking: Ranking, modality: str | None) -> Iterator[tuple[Run, str, dict, str]]:
    """(run, modality, its metrics, the row's model cell with any marks) of each row a table shows."""
    for run in ranking.runs:
        for m in run.modalities():
            if modality is None or m == modality:
                marks = [run.incomplete(), run.image_warning() if m == "image" else None]
                name = run.label + "".join(f" ({mark})" for mark in marks if mark)
                yield run, m, run.results["metrics"][m], name
