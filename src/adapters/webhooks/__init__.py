"""Webhook delivery over HTTP/1.1."""

from fourcorner.adapters.webhooks.sender import Http1WebhookSender

__all__ = ["Http1WebhookSender"]
