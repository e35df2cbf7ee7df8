"""The 0.1.0 path of the ``eval`` and ``tune`` commands, which moved into the command line,
:mod:`rerankit.cli`. ``rerankit.eval`` may not import ``rerankit.cli`` (see
docs/layout.md), so importing this says where they went."""

raise ImportError(
    "rerankit.eval.cli is gone: the eval and tune commands are part of rerankit.cli; run "
    "them with rerankit.cli.main(['eval', ...]) or the rerankit command, and evaluate in "
    "Python with rerankit.evaluate",
    name="rerankit.eval.cli",
)
