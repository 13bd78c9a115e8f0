"""Use cases of webhooks: the resource, raising events into the outbox, reading events."""

from __future__ import annotations

import json
import secrets
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import attrs

from fourcorner.application.access import Principal, authorise
from fourcorner.application.collections import DELIVERIES, EVENTS, WEBHOOKS
from fourcorner.application.context import Context
from fourcorner.application.ports import KeySealer
from fourcorner.application.repositories import Deliveries, Events, Webhooks
from fourcorner.application.scoped import InOrg, owned, owned_many, remove_owned
from fourcorner.application.sealed import WEBHOOK_SECRET
from fourcorner.application.storage import UnitOfWork
from fourcorner.domain import webhook as rules
from fourcorner.domain.clock import iso
from fourcorner.domain.errors import InvalidInput, NotFound, NothingToRedeliver
from fourcorner.domain.events import EVENT_NAMES, WEBHOOK_TEST
from fourcorner.domain.roles import Role
from fourcorner.domain.webhook import Delivery, Event, Webhook
from fourcorner.domain.webhook_target import check_url, host_key


@attrs.frozen
class CreateWebhook:
    url: str
    events: tuple[str, ...]
    description: str = ""
    is_enabled: bool = True


@attrs.frozen
class UpdateWebhook:
    url: str | None = None
    events: tuple[str, ...] | None = None
    description: str | None = None
    is_enabled: bool | None = None


@attrs.frozen
class TriggerEvent:
    event_type: str | None = None
    event: str | None = None  # the spelling some clients send


@attrs.frozen
class WebhookSettings:
    allow_private_targets: bool = False


@attrs.frozen
class NewWebhook:
    record: Webhook
    secret: str


def _check(url: str, events: tuple[str, ...], allow_private: bool) -> None:
    rules.check_events(events)
    check_url(url, allow_private=allow_private)


async def create(
    ctx: Context,
    sealer: KeySealer,
    principal: Principal,
    org_id: uuid.UUID,
    cmd: CreateWebhook,
    settings: WebhookSettings,
) -> NewWebhook:
    """A webhook of ``org_id``; ``TooManyWebhooks`` when it has ``MAX_WEBHOOKS`` already. The
    organisation is locked (``authorise(..., lock=True)``) while its webhooks are counted and
    the new one added, so webhooks made at once are counted one after the other."""
    _check(cmd.url, cmd.events, settings.allow_private_targets)
    secret = rules.new_secret(secrets.token_bytes(24))
    now = ctx.clock()
    ident = ctx.new_id()
    async with ctx.uow() as uow:
        await authorise(uow, principal, org_id, Role.ORGADMIN, lock=True)
        rules.check_room(await Webhooks(uow).count_of_org(org_id))
        hook = Webhook(
            id=ident,
            org_id=org_id,
            url=cmd.url,
            events=tuple(dict.fromkeys(cmd.events)),
            is_enabled=cmd.is_enabled,
            description=cmd.description,
            sealed_secret=WEBHOOK_SECRET.seal(sealer, ident, secret),
            created_at=now,
            created_by=principal.actor,
            last_modified_at=now,
            last_modified_by=principal.actor,
        )
        await uow.repository(WEBHOOKS).add(hook)
        await uow.commit()
    return NewWebhook(hook, secret)


_WEBHOOKS = InOrg(WEBHOOKS, "webhook")
get = _WEBHOOKS.get
list_webhooks = _WEBHOOKS.list


async def _own(
    uow: UnitOfWork, org_id: uuid.UUID, ident: uuid.UUID, *, lock: bool = False
) -> Webhook:
    return await owned(uow, WEBHOOKS, org_id, ident, "webhook", lock=lock)


async def update(
    ctx: Context,
    principal: Principal,
    org_id: uuid.UUID,
    ident: uuid.UUID,
    cmd: UpdateWebhook,
    settings: WebhookSettings,
) -> Webhook:
    """The webhook with the fields ``cmd`` gives changed. It is read locked (``owned(...,
    lock=True)``), as participants and access points are: the whole record is written back,
    so two changes at once must each start from the other's result, or the later write would
    undo the earlier one (a webhook disabled left enabled, a secret sealed anew at start put
    back). When its URL names another host, its deliveries still due follow it there
    (``Deliveries.move_pending``), in the same unit of work: a claim leaves them out while
    that host is full, not while the one before is."""
    async with ctx.uow() as uow:
        await authorise(uow, principal, org_id, Role.ORGADMIN)
        before = await _own(uow, org_id, ident, lock=True)
        changes = {k: v for k, v in attrs.asdict(cmd, recurse=False).items() if v is not None}
        if cmd.events is not None:  # each event once, as when the webhook is made
            changes["events"] = tuple(dict.fromkeys(cmd.events))
        hook = attrs.evolve(
            before, **changes, last_modified_at=ctx.clock(), last_modified_by=principal.actor
        )
        _check(hook.url, hook.events, settings.allow_private_targets)
        await uow.repository(WEBHOOKS).update(hook)
        if host_key(hook.url) != host_key(before.url):  # else none is read
            await Deliveries(uow).move_pending(hook.id, host_key(hook.url))
        await uow.commit()
    return hook


async def delete_many(
    ctx: Context, principal: Principal, org_id: uuid.UUID, ids: list[uuid.UUID]
) -> list[str]:
    async with ctx.uow() as uow:
        await authorise(uow, principal, org_id, Role.ORGADMIN)
        # held in id order, not the order the client names them (``owned_many``)
        await owned_many(uow, WEBHOOKS, org_id, ids, "webhook")
        done = []
        for ident in dict.fromkeys(ids):
            await remove_owned(uow, WEBHOOKS, ident, "webhook")
            done.append(str(ident))
        await uow.commit()
    return done


async def webhooks_of(ctx: Context, org_id: uuid.UUID) -> list[Webhook]:
    """The organisation's webhooks, for ``raise_event``: read before the unit of work that
    raises the event, through ``reads()`` (from the record cache where there is one, so no
    round trip a document). As current as a read in that unit of work: it read them unlocked
    too, so a webhook made, changed or deleted while the event is raised was seen or not,
    either way. A delivery to a webhook disabled or deleted since is given up when claimed
    (the delivery worker reads each webhook, uncached, when it leases its deliveries)."""
    async with ctx.reads() as uow:
        return await Webhooks(uow).of_org(org_id)


async def raise_event(
    ctx: Context,
    uow: UnitOfWork,
    org_id: uuid.UUID,
    event_type: str,
    payload: Mapping[str, Any],
    webhooks: Sequence[Webhook],
) -> Event:
    """Write an event and one delivery per subscribed, enabled webhook of ``webhooks`` (the
    organisation's, ``webhooks_of``) — in the caller's unit of work, so the event exists
    exactly when the change that raised it does."""
    if event_type not in EVENT_NAMES:
        raise ValueError(f"unknown event {event_type}")
    now = ctx.clock()
    hooks = rules.subscribed(webhooks, event_type)
    event_id = ctx.new_id()
    deliveries = [_delivery(ctx, org_id, event_id, h, now) for h in hooks]
    summaries = tuple(d.summary() for d in deliveries)
    event = Event(
        id=event_id,
        org_id=org_id,
        event_type=event_type,
        payload=dict(payload),
        created_at=now,
        status=rules.overall(summaries),
    ).with_deliveries(summaries)
    # fresh ids, so nothing can clash: the bulk path, which may go out with what follows
    # (a round trip saved where the caller's transaction has begun)
    await uow.repository(EVENTS).add_many([event])
    await uow.repository(DELIVERIES).add_many(deliveries)
    return event


def _delivery(
    ctx: Context, org_id: uuid.UUID, event_id: uuid.UUID, hook: Webhook, now: datetime
) -> Delivery:
    """A delivery of ``org_id``'s event ``event_id`` to ``hook``, due ``now``, at the host
    its URL names (``Delivery.host``)."""
    return Delivery(
        id=ctx.new_id(),
        event_id=event_id,
        webhook_id=hook.id,
        org_id=org_id,
        created_at=now,
        next_attempt_at=now,
        host=host_key(hook.url),
    )


async def trigger_test(
    ctx: Context,
    principal: Principal,
    org_id: uuid.UUID,
    cmd: TriggerEvent,
    *,
    turn: Callable[[uuid.UUID], None] | None = None,
) -> Event:
    """Raise a test event to the organisation's webhooks subscribed to it. ``turn``: called
    with the organisation's id once the caller is known to be its orgadmin, before anything
    is written; it raises to refuse (a bound on test events per organisation), so another
    organisation's caller can never use up this one's."""
    name = cmd.event_type or cmd.event
    if name != WEBHOOK_TEST:
        field = "$.event" if cmd.event_type is None and cmd.event is not None else "$.eventType"
        raise InvalidInput.one(field, f"only {WEBHOOK_TEST} can be triggered by hand")
    async with ctx.uow() as uow:
        await authorise(uow, principal, org_id, Role.ORGADMIN)
        if turn is not None:
            turn(org_id)
        event = await raise_event(
            ctx,
            uow,
            org_id,
            WEBHOOK_TEST,
            {"message": "This is a test event from fourcorner."},
            await Webhooks(uow).of_org(org_id),
        )
        await uow.commit()
    return event


async def redeliver(
    ctx: Context, principal: Principal, org_id: uuid.UUID, ident: uuid.UUID
) -> Event:
    """Queue a new delivery of a stored event to each webhook it was delivered to before (at
    its first raising or a redelivery) that still exists and is enabled: new deliveries, each
    with three attempts of its own, beside the earlier ones on the event. Webhooks made or
    subscribed since are not added: a redelivery repeats what happened, to the same places.
    ``NothingToRedeliver`` when none of those webhooks is left; ``TooManyDeliveries`` when
    the event would have more than ``MAX_DELIVERIES`` (nothing is redelivered then).

    The event is locked first, as the delivery worker locks it to write outcomes, so neither
    loses the other's deliveries."""
    now = ctx.clock()
    async with ctx.uow() as uow:
        await authorise(uow, principal, org_id, Role.ORGADMIN)
        events = uow.repository(EVENTS)
        event = await events.lock(ident)
        if event is None or event.org_id != org_id:
            raise NotFound(resource="event", ident=str(ident))
        hooks = {h.id: h for h in await Webhooks(uow).of_org(org_id)}
        targets = [
            hooks[w]
            for w in dict.fromkeys(d.webhook_id for d in event.deliveries)
            if w in hooks and hooks[w].is_enabled
        ]
        if not targets:
            raise NothingToRedeliver(event_id=str(ident))
        fresh = [_delivery(ctx, org_id, event.id, h, now) for h in targets]
        event = event.redelivered([d.summary() for d in fresh])
        for d in fresh:
            await uow.repository(DELIVERIES).add(d)
        await events.update(event)
        await uow.commit()
    return event


_EVENTS = InOrg(EVENTS, "event")
list_events = _EVENTS.list
get_event = _EVENTS.get


def body_of(event: Event) -> bytes:
    """The delivery body: ``{id, eventType, createdAt, orgId, payload}``."""
    return json.dumps(
        {
            "id": str(event.id),
            "eventType": event.event_type,
            "createdAt": iso(event.created_at),
            "orgId": str(event.org_id),
            "payload": event.payload,
        },
        separators=(",", ":"),
        default=str,
    ).encode()


async def purge(ctx: Context, *, now: datetime | None = None, batch: int = 500) -> int:
    """Delete events older than the retention (14 days) and their deliveries, ``batch``
    events to a transaction (three statements: claim the events, find their deliveries, remove
    both), so that readers and writers wait for no long transaction."""
    cutoff = (now or ctx.clock()) - rules.RETENTION
    removed = 0
    while True:
        async with ctx.uow() as uow:
            stored, deliveries = Events(uow), Deliveries(uow)
            events = await stored.claim_older_than(cutoff, batch)
            ids = [e.id for e in events]
            await deliveries.remove_many([d.id for d in await deliveries.of_events(ids)])
            await stored.remove_many(ids)
            await uow.commit()
        removed += len(events)
        if len(events) < batch:
            return removed
