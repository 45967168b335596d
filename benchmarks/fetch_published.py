"""Assemble the published instances of benchmarks/published.json (and the classic set's) into a
folder for benchmarks/bench_published.py, from public GitHub copies pinned by commit.

    python benchmarks/fetch_published.py --dir ~/published            # clones (blobs on demand)
    python benchmarks/fetch_published.py --dir ~/published --from DIR # existing clones in DIR

The original hosts (DIMACS's FTP, Beasley's OR-Library, TSPLIB's Heidelberg pages) are not
all reachable any more; these repositories hold the published files, and where a copy differs
from the published form it is turned back into it: the DIMACS clique graphs of
jamestrimble/max-weight-clique-instances carry added vertex weights (`n v w` lines, dropped
here: the edge lines are the published ones), and the knapsack files of ttowzg/KnapsackProblem
split the `n capacity` header over two lines and end with the optimal solution's 0/1 line
(joined and dropped). Files already in the folder are overwritten; nothing else is touched.
`--from DIR` takes clones named `owner+name` or `owner/name` (bare or not) instead of cloning.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from mmnp.clikit import script_main

LIST = Path(__file__).with_name("published.json")


def _dimacs_unweighted(text: str) -> str:
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith("n "))


def _knapsack(text: str) -> str:
    """'n' and 'capacity' on one line, then the n 'value weight' lines (the solution line dropped)."""
    rows = [line.split() for line in text.splitlines() if line.strip()]
    if len(rows[0]) == 1:
        rows = [rows[0] + rows[1]] + rows[2:]
    n = int(rows[0][0])
    return "".join(" ".join(row) + "\n" for row in rows[: n + 1])


def _same(text: str) -> str:
    return text


# repository, commit, folder in it, file-name suffix the listed name gets there, transformation
SOURCES: list[tuple[str, str, str, str, Callable[[str], str]]] = [
    ("jamestrimble/max-weight-clique-instances", "a0fd6b631136255807a98727b496a09a65b3301d",
     "DIMACS/weighted", "", _dimacs_unweighted),
    ("rafaelcalpena/graph-coloring", "bff4a0eb02148153a7fdedd63cfbbe41405c8dc0",
     "graph-coloring/dimacs", "", _same),
    ("yogafans/Tabu_k_Color", "051d0e9c6668a2755ce38a37344c2fc5a054555d", "data", "", _same),
    ("pinam45/USCP_instances", "63f47d103df49dca061539e99a05aea363d301ed", "OR-Library", "", _same),
    ("pinam45/USCP_instances", "63f47d103df49dca061539e99a05aea363d301ed", "steiner-triple-covering", "", _same),
    ("mastqe/tsplib", "775541365dc3f7f3cd6faa8d0e206036d2c45e0e", "", "", _same),
    ("ttowzg/KnapsackProblem", "38519d6d8d2f2321bc9d3deffc5c4df15f999ac0", "large_scale", ".txt", _knapsack),
    ("Lorena-Avelino/heuristica-2", "fda4decef28b66b92a29db36053167763635f3e8", "", "", _same),
]


def _git_dir(repo: str, clones: Path | None, scratch: Path) -> Path:
    if clones is not None:
        for name in (repo.replace("/", "+"), repo):
            for candidate in (clones / name / ".git", clones / name / "repo", clones / name):
                if (candidate / "HEAD").is_file():
                    return candidate
        raise SystemExit(f"error: no clone of {repo} under {clones} (expected {repo.replace('/', '+')} or {repo})")
    into = scratch / repo.replace("/", "+")
    if not into.exists():
        print(f"cloning {repo} (blobs fetched on demand)", flush=True)
        subprocess.run(["git", "clone", "--quiet", "--bare", "--filter=blob:none", f"https://github.com/{repo}",
                        str(into)], check=True)
    return into


def _listing(git_dir: Path, commit: str, folder: str) -> dict[str, str]:
    """File name -> path at `commit`, for the files directly in `folder`."""
    out = subprocess.run(["git", "--git-dir", str(git_dir), "ls-tree", "--name-only", commit] + ([f"{folder}/"] if folder else []),
                         check=True, capture_output=True, text=True).stdout
    return {Path(p).name: p for p in out.split()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, required=True, help="folder to write the instance files into")
    parser.add_argument("--from", dest="clones", type=Path, help="folder of existing clones (no network)")
    args = parser.parse_args(argv)
    wanted = {entry["file"] for entry in json.loads(LIST.read_text())["instances"]}
    args.dir.mkdir(parents=True, exist_ok=True)
    found: set[str] = set()
    with tempfile.TemporaryDirectory() as scratch:
        for repo, commit, folder, suffix, transform in SOURCES:
            git_dir = _git_dir(repo, args.clones, Path(scratch))
            listing = _listing(git_dir, commit, folder)
            for name in sorted(wanted - found):
                source = listing.get(name[: -len(suffix)] if suffix and name.endswith(suffix) else name)
                if source is None:
                    continue
                blob = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{commit}:{source}"],
                                      capture_output=True, text=True)
                if blob.returncode:
                    print(f"{repo}:{source}: not readable ({blob.stderr.strip()[:80]})", file=sys.stderr)
                    continue
                part = args.dir / f".{name}.part"
                part.write_text(transform(blob.stdout))
                os.replace(part, args.dir / name)
                found.add(name)
    missing = sorted(wanted - found)
    print(f"{len(found)} of {len(wanted)} listed files written to {args.dir}"
          + (f"; not found: {', '.join(missing)}" if missing else ""))
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(script_main(main))
