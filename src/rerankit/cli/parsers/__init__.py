"""The parsers of the ``rerankit`` commands, one module per command group: building them
imports argparse, the command line's own small helpers and nothing of the library's heavy
parts (numpy, the scorers, the readers, training, the service), so ``rerankit --help``,
``rerankit COMMAND --help`` and ``rerankit --version`` answer at once; each command's code
is imported when it runs (:mod:`rerankit.cli.main`)."""
