"""DISA: the partition function estimated before RL and used as a frozen anchor.

1. `estimate`: importance-sampling labels log Z_IS(q), one per prompt (`mmnp disa estimate`).
2. `anchor`: the amortised regressor g_psi(q) fitted to them and frozen (`mmnp disa fit`).
3. the anchored trainer: `mmnp.trainers.algorithms.disa` (`mmnp train --algo disa`).
"""
