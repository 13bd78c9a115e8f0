"""A delivery worker's places: its deliveries leased and not yet finished (in flight, or claimed
and waiting for their turn), counted by endpoint and by host, and the webhooks its claims leave
out because their endpoint or host has all the places it may have.

An endpoint is an organisation's host and port; a host is the host and port alone, whoever's
webhooks point there, however their URLs spell it (``domain.webhook_target.host_of``: a user
name, capitals, the default port written out, a trailing dot make no other host). A claim
leases a delivery only while its endpoint has fewer than ``endpoint_room`` (``per_endpoint``
sending and ``per_endpoint_waiting`` waiting) and its host fewer than ``host_room``; else the
delivery is left due, for a claim once one of those has finished. The endpoint's bound keeps
one organisation's slow deliveries from delaying another's to the same host (a relay); the
host's keeps many organisations' (any user may make any number) from taking all the worker's
places at a host that hangs, which every other host's deliveries would then wait behind.

A claim names what to leave out, else a full endpoint's or host's backlog, due first, would fill
every claim only to be left due again. Each delivery holds its webhook's host (``Delivery.host``),
so a claim leaves out the hosts that are full (``full_hosts``: at most ``concurrency`` divided by
``host_room`` of them), however many webhooks point there. An endpoint is an organisation's
share of a host, which its deliveries do not hold: the webhooks seen at an endpoint are kept
while it holds deliveries here and named while it is full (an organisation has at most
``domain.webhook.MAX_WEBHOOKS``). All of it goes when its last delivery has finished, so nothing
is kept of endpoints or hosts with none in flight.
"""

from __future__ import annotations

import uuid

import attrs

Host = tuple[str, int]
"""The host and port of a webhook's URL, in one spelling (``domain.webhook_target.host_of``)."""
Endpoint = tuple[uuid.UUID, Host]
"""An organisation and the host and port of a URL of its webhooks."""
NO_ENDPOINT: Endpoint = (uuid.UUID(int=0), ("", 0))
"""Where the deliveries of a webhook deleted meanwhile are counted (none is sent)."""


@attrs.define
class Places:
    endpoint_room: int  # deliveries one endpoint may hold here, sending and waiting
    host_room: int  # deliveries one host may hold here, whoever's
    # by endpoint and by host, only while a delivery to it is held here:
    by_endpoint: dict[Endpoint, int] = attrs.field(factory=dict, init=False)
    by_host: dict[Host, int] = attrs.field(factory=dict, init=False)
    hooks_of: dict[Endpoint, set[uuid.UUID]] = attrs.field(factory=dict, init=False)

    def full(self) -> set[uuid.UUID]:
        """The webhooks a claim leaves out: those kept at an endpoint that is full."""
        return {
            hook_id
            for endpoint, hook_ids in self.hooks_of.items()
            if self.by_endpoint.get(endpoint, 0) >= self.endpoint_room
            for hook_id in hook_ids
        }

    def full_hosts(self) -> set[Host]:
        """The hosts a claim leaves out: those that hold all the places a host may hold (not
        ``NO_ENDPOINT``'s, where nothing is sent, and which no delivery names)."""
        return {
            host
            for host, count in self.by_host.items()
            if count >= self.host_room and host != NO_ENDPOINT[1]
        }

    def claim(self) -> Claim:
        """The tally of one claim, counted here by ``took`` once its leases are written."""
        return Claim(self)

    def took(self, claim: Claim) -> None:
        """Count what ``claim`` leased, and keep the webhooks it saw at endpoints that hold
        deliveries here."""
        for endpoint, count in claim.taken.items():
            self.by_endpoint[endpoint] = self.by_endpoint.get(endpoint, 0) + count
        for host, count in claim.at_host.items():
            self.by_host[host] = self.by_host.get(host, 0) + count
        for endpoint, hook_ids in claim.seen.items():
            if endpoint in self.by_endpoint:  # else none is held here: not full
                self.hooks_of.setdefault(endpoint, set()).update(hook_ids)

    def finish(self, endpoint: Endpoint) -> bool:
        """One delivery to ``endpoint`` has finished; True when it was the endpoint's last
        (the endpoint is forgotten, and its host with it when none is left there either)."""
        host = endpoint[1]
        left = self.by_host[host] - 1
        if left:
            self.by_host[host] = left
        else:
            del self.by_host[host]
        left = self.by_endpoint[endpoint] - 1
        if left:
            self.by_endpoint[endpoint] = left
            return False
        del self.by_endpoint[endpoint]
        self.hooks_of.pop(endpoint, None)
        return True


@attrs.define
class Claim:
    """What one claim leased and saw, not yet counted in ``places``."""

    places: Places
    taken: dict[Endpoint, int] = attrs.field(factory=dict)
    at_host: dict[Host, int] = attrs.field(factory=dict)
    seen: dict[Endpoint, set[uuid.UUID]] = attrs.field(factory=dict)
    blocked: bool = False  # deliveries were left due for lack of room

    def take(self, endpoint: Endpoint, hook_id: uuid.UUID | None) -> bool:
        """Whether a delivery to ``endpoint`` by the webhook ``hook_id`` is leased (counted
        in this claim); a full endpoint or host leaves it due. None: the webhook is gone, and
        the delivery is leased to be given up (it is sent nowhere)."""
        host = endpoint[1]
        if hook_id is not None:
            self.seen.setdefault(endpoint, set()).add(hook_id)
            places = self.places
            if places.by_endpoint.get(endpoint, 0) + self.taken.get(endpoint, 0) >= (
                places.endpoint_room
            ):
                self.blocked = True
                return False
            if places.by_host.get(host, 0) + self.at_host.get(host, 0) >= places.host_room:
                self.blocked = True
                return False
        self.taken[endpoint] = self.taken.get(endpoint, 0) + 1
        self.at_host[host] = self.at_host.get(host, 0) + 1
        return True
