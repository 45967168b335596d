"""Regenerate docs/images: each task's medium instance (seed 0) as a model sees it, and
with a random candidate answer drawn over it (the `mmnp show` overlay).

    python docs/make_images.py
"""

from pathlib import Path

import mmnp

OUT = Path(__file__).parent / "images"


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for task in mmnp.list_tasks():
        inst = task.generate("medium", seed=0)
        (OUT / f"{task.name}.png").write_bytes(task.render(inst))
        candidate = task.solver.random(inst.data, task.rng("medium", 1))
        (OUT / f"{task.name}-answer.png").write_bytes(task.render(inst, answer=task.format_answer(candidate)))
        print(f"{task.name}: {task.verify(inst, task.format_answer(candidate)).summary()[:100]}")


if __name__ == "__main__":
    main()
