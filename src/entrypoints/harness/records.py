"""The records of the stateful test: what both sides created (their ids on each side), and
what one harness run shares between its examples (the two sides, the namespace and the
allowance of failed authentications).

A record both sides refused to create is kept too, as an absent one (an id neither side
has): what a bundle of the state machine holds then depends only on the rules the example
drew, never on the answers, which a long-lived service may give otherwise when Hypothesis
runs an example again (its throttles, limits and records are those of the whole run)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

import attrs

from fourcorner.entrypoints.harness.servers import Target


@attrs.frozen
class Ref:
    """A record both sides created: its id on each."""

    sut: str
    model: str

    def on(self, side: str) -> str:
        return self.sut if side == "sut" else self.model

    @classmethod
    def absent(cls, tag: str, n: int) -> Ref:
        """The ``n``th record of the example tagged ``tag`` that both sides refused: an id
        neither has, the same on both."""
        absent = str(uuid.uuid5(uuid.NAMESPACE_URL, f"harness:{tag}:absent:{n}"))
        return cls(absent, absent)


@attrs.frozen
class ApiKey:
    """An API key both sides created: its id, organisation and secret on each (no secret: a
    key both refused, never used as a credential)."""

    ref: Ref
    org: Ref
    secret: Ref | None


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
class FailedAuthentications:
    """The harness's own allowance of failed authentications (a revoked key used), over its
    whole run: at most ``burst`` at once, then one every ``interval`` seconds; ``spend`` waits
    for it. A service counts failures per client address across requests (``fourcorner
    serve``: 10 a minute, then 429 ``AT-1029`` for every credential of the address), and
    Hypothesis runs many examples a second: a limit per example would let the run reach the
    service's, and its answers would then depend on the examples before."""

    burst: int = 4
    interval: float = 7.5  # seconds: slower than fourcorner serve's one every 6
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    _until: float = 0.0  # when the allowance is whole again

    def spend(self) -> None:
        """Wait until one more failure is allowed, and count it."""
        now = self.clock()
        wait = self._until - now - (self.burst - 1) * self.interval
        if wait > 0:
            self.sleep(wait)
            now += wait
        self._until = max(self._until, now) + self.interval


@attrs.define
class Run:
    """What one harness run shares between examples: the two sides, the namespace and the
    allowance of failed authentications."""

    sut: Target
    model: Target
    namespace: str
    examples: int = 0
    failures: FailedAuthentications = attrs.Factory(FailedAuthentications)

    def digits(self) -> str:
        """Five digits of the namespace, for identifiers unique to the run."""
        return f"{int.from_bytes(self.namespace.encode(), 'big') % 100000:05d}"
