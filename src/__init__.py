"""fourcorner: a service for taking part in a four-corner e-invoicing network.

The layers, innermost first: ``fourcorner.domain`` (rules without I/O),
``fourcorner.application`` (use cases and the ports they call), ``fourcorner.adapters``
(storage, SMP, AS4, webhooks, ...) and ``fourcorner.entrypoints`` (HTTP server, CLI,
container). An embedding system imports the application layer and wires adapters of its
choice; see the README's "Embedding the core"."""
