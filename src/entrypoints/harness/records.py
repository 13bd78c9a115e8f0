"""The records of the stateful test: what both sides created (their ids on each side), and
what one harness run shares between its examples (the two sides and the namespace)."""

from __future__ import annotations

import attrs

from fourcorner.entrypoints.harness.servers import Target


@attrs.frozen
class Ref:
    """A record both sides created: its id on each."""

    sut: str
    model: str

    def on(self, side: str) -> str:
        return self.sut if side == "sut" else self.model


@attrs.frozen
class ApiKey:
    """An API key both sides created: its id, organisation and secret on each."""

    ref: Ref
    org: Ref
    secret: Ref


@attrs.frozen
class Participant:
    """A participant both sides created, its organisation and access point."""

    ref: Ref
    org: Ref
    ap: Ref
    identifier: str


@attrs.frozen
class Sent:
    """A document both sides accepted: the transaction and the SBD as it was sent."""

    ref: Ref
    org: Ref
    ap: Ref
    sbd: bytes


@attrs.define
class Run:
    """What one harness run shares between examples: the two sides and the namespace."""

    sut: Target
    model: Target
    namespace: str
    examples: int = 0

    def digits(self) -> str:
        """Five digits of the namespace, for identifiers unique to the run."""
        return f"{int.from_bytes(self.namespace.encode(), 'big') % 100000:05d}"
