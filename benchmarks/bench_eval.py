"""The evaluation harness's own cost, and the openai backend's throughput.

    python benchmarks/bench_eval.py [--instances 300] [--latency 0.05] [--requests 2000]

1. Overhead per sample with an instant model: request building, verification, logging
   (append + flush), and metric computation (target: under 1 ms).
2. Samples/s of the openai backend against a local server (a separate process) that
   answers every request after `--latency` seconds, at concurrency 1, 16 and 64; the ideal
   is concurrency / latency (target at 64 with 50 ms: >= 80% of 1,280/s).
3. What checking image delivery on every sample costs an image run (tests/fake_openai.py's
   vision server): the extra requests (one text-only request per distinct image prompt, plus
   the encoding check's two) against the sample requests, and the wall time against the same
   run with --skip-image-probe.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import socket
import tempfile
import time
from pathlib import Path

from mmnp.clikit import script_main
from mmnp.dataset import GenerateSpec, generate_dataset
from mmnp.dataset import select_instances
from mmnp.evaluation.backend import Completion, Request, Sampling
from mmnp.evaluation.openai_backend import OpenAIBackend
from mmnp.evaluation.runner import EvalConfig, evaluate
from mmnp.registry import get_task


class InstantModel:
    """Answers every request at once with the instance's reference answer."""

    name = "instant"

    def run(self, requests: list[Request], sampling: Sampling, emit) -> None:
        for r in requests:
            task = get_task(r.instance.task)
            emit(r, Completion("Reasoning.\n" + task.format_answer(r.instance.reference["heuristic"]["solution"])))


def overhead(instances: int, samples: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        per_cell = max(1, instances // 30)
        generate_dataset(data, GenerateSpec(tasks=tuple(t for t in _all_tasks()), difficulties=("easy", "medium", "hard"),
                                            count=per_cell, seed=0, images=False, optimal=False))
        selection = select_instances("all", ["easy", "medium", "hard"], data=data)
        insts, loader, dataset = selection.instances, selection.image, selection.identity
        config = EvalConfig("instant", ("text",), samples, Sampling())
        start = time.perf_counter()
        evaluate(InstantModel(), insts, config, Path(tmp) / "out", image_loader=loader, dataset=dataset)
        elapsed = time.perf_counter() - start
    n = len(insts) * samples
    return {"samples": n, "seconds": elapsed, "ms_per_sample": 1000 * elapsed / n}


def _all_tasks() -> list[str]:
    from mmnp.registry import list_tasks

    return [t.name for t in list_tasks()]


async def _serve(port: int, latency: float) -> None:
    """A minimal keep-alive HTTP/1.1 server answering chat completions after `latency` s."""
    body = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": "Answer: [0]"}}],
                       "usage": {"prompt_tokens": 10, "completion_tokens": 3}}).encode()
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                headers = await reader.readuntil(b"\r\n\r\n")
                length = next(int(line.split(b":")[1]) for line in headers.split(b"\r\n")
                              if line.lower().startswith(b"content-length"))
                await reader.readexactly(length)
                await asyncio.sleep(latency)
                writer.write(head + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, StopIteration):
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=1024)
    async with server:
        await server.serve_forever()


def _server_process(port: int, latency: float) -> None:
    asyncio.run(_serve(port, latency))


def throughput(concurrency: int, requests: int, latency: float) -> dict:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = multiprocessing.Process(target=_server_process, args=(port, latency), daemon=True)
    proc.start()
    time.sleep(0.5)
    try:
        task = get_task("knapsack")
        inst = task.generate("easy", 0)
        reqs = [Request(inst, "text", i, inst.prompt) for i in range(requests)]
        backend = OpenAIBackend("bench", base_url=f"http://127.0.0.1:{port}/v1", concurrency=concurrency)
        import aiohttp  # noqa: F401  the backend imports it on first use: keep that one-off cost out of the rate
        done = []
        start = time.perf_counter()
        backend.run(reqs, Sampling(), lambda r, c: done.append(c))
        elapsed = time.perf_counter() - start
    finally:
        proc.terminate()
    failures = sum(1 for c in done if c.error)
    rate = len(done) / elapsed
    ideal = concurrency / latency
    return {"concurrency": concurrency, "requests": len(done), "failures": failures, "per_s": rate,
            "ideal_per_s": ideal, "of_ideal": rate / ideal}


def delivery_cost(per_cell: int) -> dict:
    """An image run of every task (easy, `per_cell` instances each) with and without the checks."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from fake_openai import FakeOpenAI, oracle

    from mmnp.evaluation.openai_backend import OpenAIBackend as Backend

    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        generate_dataset(data, GenerateSpec(tasks=tuple(_all_tasks()), difficulties=("easy",), count=per_cell, seed=0,
                                            optimal=False))
        selection = select_instances("all", ["easy"], data=data)
        insts, loader, dataset = selection.instances, selection.image, selection.identity
        out = {}
        for skip in (True, False):
            with FakeOpenAI(oracle(insts), delay=0.02) as server:
                config = EvalConfig("openai:fake", ("image",), 1, Sampling())
                start = time.perf_counter()
                results = evaluate(Backend("fake", base_url=server.url, concurrency=16), insts, config,
                                   Path(tmp) / f"out-{skip}", image_loader=loader, dataset=dataset,
                                   skip_image_probe=skip)
                out[skip] = {"seconds": time.perf_counter() - start, "requests": len(server.requests),
                             "checks": results["timing"]["this_run_check_requests"],
                             "status": results["image_probe"]["status"]}
    return {"samples": len(insts), "checked": out[False], "unchecked": out[True]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--instances", type=int, default=300)
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--requests", type=int, default=2000)
    args = parser.parse_args()
    o = overhead(args.instances, args.samples)
    print(f"harness overhead: {o['ms_per_sample']:.3f} ms/sample over {o['samples']} samples "
          f"(verify + log + metrics, instant model)")
    print(f"openai backend, local server answering in {1000 * args.latency:.0f} ms:")
    print(f"{'concurrency':>12} {'samples/s':>10} {'ideal':>8} {'of ideal':>9} {'failures':>9}")
    for c in (1, 16, 64):
        n = min(args.requests, max(50, int(c / args.latency * 3)))
        t = throughput(c, n, args.latency)
        print(f"{c:>12} {t['per_s']:>10.1f} {t['ideal_per_s']:>8.0f} {100 * t['of_ideal']:>8.1f}% {t['failures']:>9}")
    d = delivery_cost(max(1, args.instances // 30))
    checked, unchecked = d["checked"], d["unchecked"]
    print(f"image delivery checks, {d['samples']} image samples (20 ms server, concurrency 16): "
          f"{checked['checks']} extra requests ({100 * checked['checks'] / d['samples']:.1f}%), "
          f"{checked['seconds']:.2f} s vs {unchecked['seconds']:.2f} s unchecked; status {checked['status']} "
          f"(unchecked run: {unchecked['status']})")


if __name__ == "__main__":
    raise SystemExit(script_main(main))
