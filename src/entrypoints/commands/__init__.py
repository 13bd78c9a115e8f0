"""The commands of ``fourcorner`` (``entrypoints.cli`` parses the command line and runs them).

- ``parser``: the command line, each command's options and help;
- ``serve``: ``serve`` and ``worker``, with what they log when they start and stop;
- ``migrate``: ``migrate``;
- ``replace``: ``replace-operator-certificate``;
- ``token``: ``token``;
- ``common``: what they share (the program's name and version, the one-line messages, where
  the database is).

``check`` is ``entrypoints.check``, ``harness`` is ``entrypoints.harness.cli``.
"""
