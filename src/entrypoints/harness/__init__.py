"""The property-based test harness (``pip install 'fourcorner[harness]'``, docs/harness.md).

- ``strategies``: Hypothesis strategies for the values a service of this kind takes, each
  with an almost-valid variant;
- ``machine``: the state machine that drives a running service and compares every answer
  with the in-memory core, the model;
- ``runner``: ``run()``, its report as curl commands or JUnit XML (``fourcorner harness``);
- ``servers``: the service under test (``Target``), the model, ``in_process()``;
- ``plugin``: the pytest plugin and its ``fourcorner_server`` fixture.

It lives in the entrypoints layer: like the server, it builds on the adapters and the core.
"""
