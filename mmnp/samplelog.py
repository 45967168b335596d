"""The run's sample log (not the instance records of `mmnp.core`) and its one owner: the sample key,
the append-only JSONL log (torn-line-safe append and resume, latest line per key wins) and the
output-folder lock.

`samples.jsonl` (eval) and DISA's `labels.jsonl` are such logs; readers (the leaderboard)
use `read_samples`, never a parser of their own.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable, Iterable

from mmnp.errors import DataError
from mmnp.files import FolderLock  # noqa: F401  (the run folder's lock: eval holds it, generate too)

SAMPLES = "samples.jsonl"
TOKEN_FIELDS = ("prompt_tokens", "completion_tokens")


def sample_key(instance_id: str, modality: str, sample: int) -> str:
    """The key of one (instance, modality, sample): what resume and the leaderboard match on."""
    return f"{instance_id}|{modality}|{sample}"


def dumps_line(record: dict) -> bytes:
    """One JSONL line. Refuses NaN/Infinity (invalid JSON) and lone surrogates (invalid UTF-8)."""
    return (json.dumps(record, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


class JsonlLog:
    """An append-only JSONL file of records keyed by `key_of(record)`; the latest line per key wins.

    Opening it cuts a torn last line (a crash mid-write) and names the file and line of any
    other damage. Each record is appended with one `write` on an O_APPEND descriptor, so a
    line is never interleaved with another writer's."""

    def __init__(self, path: str | Path, key_of: Callable[[dict], str] = lambda r: r["key"]) -> None:
        self.path = Path(path)
        self.key_of = key_of
        self.records: dict[str, dict] = {}
        self._fd: int | None = None
        if self.path.exists():
            for record in _read_lines(self.path, repair=True, key_of=key_of):
                self.records[key_of(record)] = record

    def append(self, record: dict) -> None:
        line = dumps_line(record)
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(self._fd, line)  # in the page cache at once: survives kill -9; fsync on close
        self.records[self.key_of(record)] = record

    def rewrite(self) -> None:
        """Replace the file by its latest record per key, atomically."""
        from mmnp.files import atomic_write

        self.close()
        atomic_write(self.path, b"".join(dumps_line(r) for r in self.records.values()))

    def close(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None


class SampleLog(JsonlLog):
    """samples.jsonl: a key is done when its latest record is not a failed call."""

    def done(self, key: str) -> bool:
        record = self.records.get(key)
        return record is not None and not record.get("failed", True)


def read_samples(path: str | Path) -> list[dict]:
    """The latest record per key of a samples.jsonl (read-only: a torn last line is skipped, not cut)."""
    latest: dict[str, dict] = {}
    for record in _read_lines(Path(path), repair=False):
        latest[record["key"]] = record
    return list(latest.values())


def _read_lines(path: Path, repair: bool, key_of: Callable[[dict], str] = lambda r: r["key"]) -> Iterable[dict]:
    raw = path.read_bytes()
    if raw and not raw.endswith(b"\n"):  # killed mid-write: the partial line is not a record
        raw = raw[: raw.rfind(b"\n") + 1]
        if repair:
            with open(path, "r+b") as f:
                f.truncate(len(raw))
    records = []
    for number, line in enumerate(raw.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as e:
            raise DataError(f"{path}, line {number}: not a JSON record ({type(e).__name__}); "
                            "delete that line and run again (its sample is then asked again)") from None
        try:
            keyed = isinstance(record, dict) and isinstance(key_of(record), str)
        except (KeyError, TypeError):
            keyed = False
        if not keyed:
            raise DataError(f"{path}, line {number}: a record without its key; "
                            "delete that line and run again (its sample is then asked again)")
        for name in TOKEN_FIELDS:  # written by an older mmnp that stored whatever the server said
            if name in record and not _is_count(record[name]):
                record[name] = None
        records.append(record)
    return records


def _is_count(value) -> bool:
    return value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 0)
