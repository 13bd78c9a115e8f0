"""Handlers of webhooks and their stored events."""

from __future__ import annotations

import cattrs
from dependency_injector.wiring import Provide

from fourcorner.application import webhooks
from fourcorner.application.context import Context
from fourcorner.application.webhooks import WebhookSettings
from fourcorner.entrypoints.http import views
from fourcorner.entrypoints.http.handlers import page
from fourcorner.entrypoints.http.routing import Reply, Req


async def create_webhook(
    req: Req,
    ctx: Context = Provide["context"],
    conv: cattrs.Converter = Provide["converter"],
    settings: WebhookSettings = Provide["webhook_settings"],
) -> Reply:
    new = await webhooks.create(ctx, req.caller, req.path_uuid("orgId"), req.body, settings)
    return Reply(201, views.NEW_WEBHOOK.dump(conv, new.record, secret=new.secret))


async def list_webhooks(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    result = await webhooks.list_webhooks(ctx, req.caller, req.path_uuid("orgId"), req.listing())
    return Reply(200, page(conv, views.WEBHOOK, result))


async def get_webhook(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    hook = await webhooks.get(ctx, req.caller, req.path_uuid("orgId"), req.path_uuid("id"))
    return Reply(200, views.WEBHOOK.dump(conv, hook))


async def update_webhook(
    req: Req,
    ctx: Context = Provide["context"],
    conv: cattrs.Converter = Provide["converter"],
    settings: WebhookSettings = Provide["webhook_settings"],
) -> Reply:
    hook = await webhooks.update(
        ctx, req.caller, req.path_uuid("orgId"), req.path_uuid("id"), req.body, settings
    )
    return Reply(200, views.WEBHOOK.dump(conv, hook))


async def delete_webhooks(req: Req, ctx: Context = Provide["context"]) -> Reply:
    done = await webhooks.delete_many(ctx, req.caller, req.path_uuid("orgId"), list(req.body.ids))
    return Reply(200, {"ids": done})


async def trigger_test_event(
    req: Req,
    ctx: Context = Provide["context"],
    conv: cattrs.Converter = Provide["converter"],
    wake: object = Provide["delivery_wake"],
) -> Reply:
    event = await webhooks.trigger_test(ctx, req.caller, req.path_uuid("orgId"), req.body)
    if callable(wake):
        wake()
    return Reply(200, views.EVENT.dump(conv, event))


async def list_events(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    result = await webhooks.list_events(ctx, req.caller, req.path_uuid("orgId"), req.listing())
    return Reply(200, page(conv, views.EVENT, result))


async def get_event(
    req: Req, ctx: Context = Provide["context"], conv: cattrs.Converter = Provide["converter"]
) -> Reply:
    event = await webhooks.get_event(ctx, req.caller, req.path_uuid("orgId"), req.path_uuid("id"))
    return Reply(200, views.EVENT.dump(conv, event))


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
    return Reply(202, views.EVENT.dump(conv, event))
