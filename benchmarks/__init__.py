"""rerankit's benchmarks, by purpose (see README.md beside this file): ``speed/`` times
rerankit beside the tools users would pick instead, ``quality/`` makes the quality figures
the documentation quotes, and ``experiments/`` holds the studies that chose today's
constants. Run any of them from the repository root as a module, e.g.
``python -m benchmarks.speed.lexical``."""
