"""Reference solvers, one module per task: a fast deterministic heuristic (the Quality
Ratio's reference), an exact/strong OR-Tools solver (the best-known objective), and a
uniformly random candidate (a weak baseline)."""
