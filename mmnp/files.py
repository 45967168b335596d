"""File utilities every writer shares: atomic writes, the folder lock, and deletion that stays
inside a folder.

A writer that is killed leaves at most a temporary `.NAME.tmpPID` beside the file it was
writing. Such a file is stale exactly when nobody holds the folder's lock: whoever takes the
lock removes the temporaries of the files it writes (by name, never by asking whether a PID is
alive: a PID is reused, a lock is not).
"""

from __future__ import annotations

import json
import os
import re
import socket
import time
from pathlib import Path
from typing import Callable, TypeVar

from mmnp.errors import DataError, UsageError

T = TypeVar("T")

TEMPORARY = re.compile(r"^\.(?P<name>.+)\.tmp\d+$")  # what `atomic_write` leaves behind when killed mid-write


def atomic_write(path: Path, data: bytes | str) -> None:
    """Write via a temporary file and rename, so a crash never leaves a half-written file
    (a kill may leave the temporary `.NAME.tmpPID`; the folder's next lock holder removes it)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def remove_temporaries(folder: Path, owns=lambda name: True) -> list[Path]:
    """Remove the temporaries `atomic_write` left in `folder` for files `owns(name)` accepts.
    Call it only while holding the folder's lock: then no writer of those files is alive."""
    removed = []
    if not folder.is_dir() or folder.is_symlink():
        return removed
    for entry in folder.iterdir():
        match = TEMPORARY.match(entry.name)
        if match and owns(match["name"]) and entry.is_file() and not entry.is_symlink():
            entry.unlink(missing_ok=True)
            removed.append(entry)
    return removed


def check_new_folder(out: Path) -> None:
    """Refuse an --out folder that exists with something in it (or is a file): mmnp writes whole
    new folders (`write_whole_folder`), never into or over a user's."""
    out = Path(out)
    if out.is_symlink() or os.path.ismount(out):  # it could not be replaced by the finished folder
        raise UsageError(f"--out {out} is a link or a mount point; give a new folder's path")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"--out {out} exists and is not empty; choose a new folder (mmnp never overwrites your files)")
    if out.is_dir() and os.path.samefile(out, "."):  # the finished folder replaces it: a shell in it would see none
        raise UsageError(f"--out {out} is the current folder, which mmnp would replace by the finished one (your shell "
                         "would stay in the old, empty one); give a new folder's path, e.g. --out export")


def write_whole_folder(out: Path, write: Callable[[Path], T]) -> T:
    """Run `write` on a staging folder beside `out` (new or empty: `check_new_folder`), then rename
    it to `out`: the folder appears whole or not at all, and a kill leaves only `.OUT.*` beside it."""
    import shutil
    import tempfile

    out = Path(os.path.abspath(out))  # `.` or `x/..` has no name and no parent to stage beside
    check_new_folder(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    umask = os.umask(0)
    os.umask(umask)
    staging.chmod(0o777 & ~umask)  # mkdtemp's private 0700 would outlive the rename
    try:
        result = write(staging)
        check_new_folder(out)  # made meanwhile by someone else: theirs stays
        if out.exists():
            out.rmdir()
        os.replace(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return result


MMNP_FILES = ("manifest.json", "results.json", "samples.jsonl", "run.json")  # what an --out never replaces


def check_out_file(out: Path, example: str, replaces: Callable[[Path], bool], what: str) -> None:
    """Refuse an --out that is a folder, lies under a file, would replace one of mmnp's own files,
    or lies inside a dataset folder (whose every file its manifest vouches for): a report or a
    picture is written beside data, never over it. An existing file is replaced only where
    `replaces` says it is one this command writes (`what`: its name, for the refusal), so a report
    is refreshed and a user's own file kept. `example` is a file name to suggest."""
    out = Path(out)
    if out.is_dir():
        raise UsageError(f"--out {out} is a folder; give a file path such as {out / example}")
    for parent in out.absolute().parents:
        if parent.exists() and not parent.is_dir():
            raise UsageError(f"--out {out}: {parent} is a file, not a folder; choose another path")
        if (parent / "manifest.json").is_file():
            raise UsageError(f"--out {out} lies inside the dataset folder {parent}; choose a path outside it")
    if out.name in MMNP_FILES:
        raise UsageError(f"--out {out} would overwrite an mmnp file; choose another name, e.g. {example}")
    if out.is_symlink() or out.exists() and not (out.is_file() and replaces(out)):
        raise UsageError(f"--out {out} exists and is not {what}; mmnp never overwrites your files: move it away, "
                         f"or choose another path such as {out.parent / example}")


def inside(root: Path, rel: str | Path) -> Path | None:
    """`root/rel` when neither it nor any folder between it and `root` is a link (so writing or
    deleting there stays inside `root`); None otherwise."""
    path = Path(root)
    for part in Path(rel).parts:
        if part in ("", ".", "..") or "/" in part:
            return None
        path = path / part
        if path.is_symlink():
            return None
    return path


def check_writable_inside(root: Path, rel: str | Path) -> Path:
    """`root/rel`, refused when a link on the way would take a write outside `root`."""
    path = inside(root, rel)
    if path is None:
        raise DataError(f"{Path(root) / rel}: it, or a folder on the way, is a link; mmnp writes only inside "
                        f"{root} (replace the link by a folder, or choose another --out)")
    return path


class FolderLock:
    """An exclusive lock on a folder for the life of a run (`flock` on `FOLDER/.lock`, holding
    the pid, host and start time that a refusal names).

    The kernel drops the lock when its process dies, so a lock left by a killed run is taken
    over at once. `remove=True` deletes the lock file on release (a dataset folder stays clean);
    a taker checks that the file it locked is still the one at the path, so a file removed
    meanwhile is never held by two runs at once."""

    NAME = ".lock"

    def __init__(self, folder: str | Path, option: str = "--output-path", remove: bool = False) -> None:
        self.path = Path(folder) / self.NAME
        self.option = option
        self.remove = remove
        self._fd: int | None = None

    def __enter__(self) -> FolderLock:
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _holder(os.read(fd, 4096))
                os.close(fd)
                raise DataError(f"{self.path.parent} is in use by another run ({holder}); wait for it to finish "
                                f"or choose another {self.option}") from None
            try:
                same = os.stat(self.path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)  # its holder removed it as we opened it: lock the new one
        os.ftruncate(fd, 0)
        info = {"pid": os.getpid(), "host": socket.gethostname(),
                "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        os.pwrite(fd, json.dumps(info).encode(), 0)
        self._fd = fd
        remove_temporaries(self.path.parent, lambda name: True)  # ours: nobody else writes here now
        return self

    def __exit__(self, *exc) -> None:
        if self._fd is not None:
            if self.remove:
                self.path.unlink(missing_ok=True)  # before the release: a taker then sees a new file
            os.close(self._fd)  # releases the flock
            self._fd = None


def _holder(raw: bytes) -> str:
    try:
        info = json.loads(raw.decode())
        return f"pid {info['pid']} on {info['host']}, started {info['started']}"
    except (ValueError, KeyError, TypeError):
        return "holder unknown"
