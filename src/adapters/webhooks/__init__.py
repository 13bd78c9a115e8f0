"""Webhook delivery over HTTP."""

from fourcorner.adapters.webhooks.sender import AiohttpWebhookSender

__all__ = ["AiohttpWebhookSender"]
