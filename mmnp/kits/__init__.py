"""Task kits: what several layers of a task (or several tasks) share, such as the graph prompts
and pictures, clock times, answer shapes. Generators, verifiers and solvers import kits, never
one another's layer."""
