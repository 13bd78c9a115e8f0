"""Handlers of webhooks and their stored events."""

from __future__ import annotations

import math
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable

import cattrs
from dependency_injector.wiring import Provide

from fourcorner.application import webhooks
from fourcorner.application.collections import EVENTS, WEBHOOKS
from fourcorner.application.context import Context
from fourcorner.application.ports import KeySealer
from fourcorner.application.webhooks import (
    CreateWebhook,
    TriggerEvent,
    UpdateWebhook,
    WebhookSettings,
)
from fourcorner.domain.roles import Role
from fourcorner.domain.webhook import MAX_DELIVERIES, MAX_WEBHOOKS
from fourcorner.entrypoints.http import responses
from fourcorner.entrypoints.http.errors import TooManyTestEvents
from fourcorner.entrypoints.http.handlers import Ids, page
from fourcorner.entrypoints.http.rendering import ListReply
from fourcorner.entrypoints.http.routing import Reply, Req, Route, sorted_list

PER_MINUTE = 10
"""Test events one organisation may raise a minute (``TriggerTurns``)."""


class TriggerTurns:
    """The test events each organisation may raise in this process: ``per_minute`` at once,
    given back one every ``60 / per_minute`` seconds (a bucket of turns). A test event goes to
    every webhook subscribed to it (up to ``MAX_WEBHOOKS``), at addresses the organisation
    chose: without a bound, each request would be a hundred sent there.

    An organisation has an entry only while it has used turns not yet given back, and at
    most ``most`` are kept (the least recently used forgotten, as if its turns were back)."""

    def __init__(
        self,
        per_minute: int = PER_MINUTE,
        *,
        most: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if per_minute < 1 or most < 1:
            raise ValueError("per_minute >= 1 and most >= 1")
        self.per_minute = per_minute
        self._most = most
        self._clock = clock
        self._used: OrderedDict[uuid.UUID, tuple[float, float]] = OrderedDict()  # (used, at)

    def __len__(self) -> int:
        return len(self._used)

    def take(self, org_id: uuid.UUID) -> None:
        """One turn of ``org_id``; ``TooManyTestEvents`` with the seconds until the next one
        when it has none."""
        now, every = self._clock(), 60.0 / self.per_minute
        used, at = self._used.pop(org_id, (0.0, now))
        used = max(0.0, used - (now - at) / every)  # turns given back since
        if used + 1 > self.per_minute + 1e-9:  # a turn back when its time has passed, exactly
            self._used[org_id] = (used, now)
            wait = math.ceil((used + 1 - self.per_minute) * every)
            raise TooManyTestEvents(per_minute=self.per_minute, retry_after=max(1, wait))
        self._used[org_id] = (used + 1, now)
        while len(self._used) > self._most:
            self._used.popitem(last=False)


async def create_webhook(
    req: Req,
    ctx: Context = Provide["context"],
    sealer: KeySealer = Provide["sealer"],
    conv: cattrs.Converter = Provide["converter"],
    settings: WebhookSettings = Provide["webhook_settings"],
) -> Reply:
    new = await webhooks.create(ctx, sealer, req.caller, req.path_uuid("orgId"), req.body, settings)
    return Reply(201, responses.NEW_WEBHOOK.dump(conv, new.record, secret=new.secret))


async def list_webhooks(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    result = await webhooks.list_webhooks(ctx, req.caller, req.path_uuid("orgId"), req.listing())
    return Reply(200, page(conv, responses.WEBHOOK, result))


async def get_webhook(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    hook = await webhooks.get(ctx, req.caller, req.path_uuid("orgId"), req.path_uuid("id"))
    return Reply(200, responses.WEBHOOK.dump(conv, hook))


async def update_webhook(
    req: Req,
    ctx: Context = Provide["context"],
    conv: cattrs.Converter = Provide["converter"],
    settings: WebhookSettings = Provide["webhook_settings"],
) -> Reply:
    hook = await webhooks.update(
        ctx, req.caller, req.path_uuid("orgId"), req.path_uuid("id"), req.body, settings
    )
    return Reply(200, responses.WEBHOOK.dump(conv, hook))


async def delete_webhooks(req: Req, ctx: Context = Provide["context"]) -> Reply:
    done = await webhooks.delete_many(ctx, req.caller, req.path_uuid("orgId"), list(req.body.ids))
    return Reply(200, {"ids": done})


async def trigger_test_event(
    req: Req,
    ctx: Context = Provide["context"],
    conv: cattrs.Converter = Provide["converter"],
    wake: object = Provide["delivery_wake"],
    turns: TriggerTurns = Provide["test_events"],
) -> Reply:
    org_id = req.path_uuid("orgId")
    event = await webhooks.trigger_test(ctx, req.caller, org_id, req.body, turn=turns.take)
    if callable(wake):
        wake()
    return Reply(200, responses.EVENT.dump(conv, event))


async def list_events(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    result = await webhooks.list_events(ctx, req.caller, req.path_uuid("orgId"), req.listing())
    return Reply(200, page(conv, responses.EVENT, result))


async def get_event(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    event = await webhooks.get_event(ctx, req.caller, req.path_uuid("orgId"), req.path_uuid("id"))
    return Reply(200, responses.EVENT.dump(conv, event))


async def redeliver_event(
    req: Req,
    ctx: Context = Provide["context"],
    conv: cattrs.Converter = Provide["converter"],
    wake: object = Provide["delivery_wake"],
) -> Reply:
    name = "eventId" if "eventId" in req.raw.match_info else "id"
    event = await webhooks.redeliver(ctx, req.caller, req.path_uuid("orgId"), req.path_uuid(name))
    if callable(wake):
        wake()
    return Reply(202, responses.EVENT.dump(conv, event))


# --- routes ---------------------------------------------------------------------------------

A = Role.ORGADMIN

ROUTES = (
    Route(
        "GET",
        "/orgs/{orgId}/webhooks",
        list_webhooks,
        "List webhooks.",
        A,
        "webhooks",
        response=ListReply(responses.WEBHOOK),
        query=sorted_list(WEBHOOKS),
    ),
    Route(
        "POST",
        "/orgs/{orgId}/webhooks",
        create_webhook,
        "Register a webhook; the answer carries its signing secret, this once only. An "
        f"organisation has at most {MAX_WEBHOOKS} webhooks (409 AT-1106 beyond).",
        A,
        "webhooks",
        body=CreateWebhook,
        response=responses.NEW_WEBHOOK,
        status=201,
        errors=("AT-1106",),
    ),
    Route(
        "POST",
        "/orgs/{orgId}/webhooks/batch-delete",
        delete_webhooks,
        "Delete webhooks.",
        A,
        "webhooks",
        body=Ids,
        response=responses.IDS,
    ),
    Route(
        "POST",
        "/orgs/{orgId}/webhooks/trigger-test-event",
        trigger_test_event,
        f"Raise a webhook.test event to the webhooks subscribed to it (at most {PER_MINUTE} "
        "a minute per organisation).",
        A,
        "webhooks",
        body=TriggerEvent,
        response=responses.EVENT,
        errors=("AT-1030",),
    ),
    Route(
        "GET",
        "/orgs/{orgId}/webhooks/events",
        list_events,
        "Stored events (14 days) with their delivery status.",
        A,
        "webhooks",
        response=ListReply(responses.EVENT),
        query=sorted_list(EVENTS),
    ),
    Route(
        "GET",
        "/orgs/{orgId}/webhooks/events/{id}",
        get_event,
        "One stored event with its delivery attempts.",
        A,
        "webhooks",
        response=responses.EVENT,
    ),
    *(
        Route(
            "POST",
            path,
            redeliver_event,
            "Queue a new delivery of a stored event to the webhooks it was delivered to "
            "before that still exist and are enabled (not to webhooks subscribed since); "
            "each gets three attempts of its own, recorded on the event beside the earlier "
            "ones (status code or error, the first KiB of the answer, duration). An event "
            f"keeps at most {MAX_DELIVERIES} deliveries (409 AT-1107 for a redelivery beyond).",
            A,
            "webhooks",
            response=responses.EVENT,
            status=202,
            errors=("AT-1102", "AT-1107"),
        )
        for path in (
            "/orgs/{orgId}/events/{eventId}/redeliver",
            "/orgs/{orgId}/webhooks/events/{id}/redeliver",
        )
    ),
    Route(
        "GET",
        "/orgs/{orgId}/webhooks/{id}",
        get_webhook,
        "Get a webhook.",
        A,
        "webhooks",
        response=responses.WEBHOOK,
    ),
    Route(
        "PUT",
        "/orgs/{orgId}/webhooks/{id}",
        update_webhook,
        "Update a webhook.",
        A,
        "webhooks",
        body=UpdateWebhook,
        response=responses.WEBHOOK,
    ),
)
