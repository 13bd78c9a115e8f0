"""In-memory adapters: production code for embedders and the test harness.

One for every port the core calls: storage, the SMP and the directory, the participant
lookup, the AP transport and its message reader (a loopback between access points of one
process), the webhook sender and the network's SML (registration). Each keeps what it was
given for its caller to read back. ``build_container(settings, participant_lookup=...,
ap_transport=..., message_reader=..., webhook_sender=..., locator=..., directory=...)`` puts
them in place of the network's.
"""

from fourcorner.adapters.memory.lookup import InMemoryParticipantLookup
from fourcorner.adapters.memory.loopback import (
    InMemoryApTransport,
    InMemoryMessageReader,
    LoopbackNetwork,
)
from fourcorner.adapters.memory.sml import InMemoryLocator, InMemorySml
from fourcorner.adapters.memory.storage import InMemoryStorage, InMemoryUnitOfWork
from fourcorner.adapters.memory.webhooks import InMemoryWebhookSender

__all__ = [
    "InMemoryApTransport",
    "InMemoryLocator",
    "InMemoryMessageReader",
    "InMemoryParticipantLookup",
    "InMemorySml",
    "InMemoryStorage",
    "InMemoryUnitOfWork",
    "InMemoryWebhookSender",
    "LoopbackNetwork",
]
