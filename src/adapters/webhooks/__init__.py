"""Webhook delivery over HTTP."""

from adapters.webhooks.sender import AiohttpWebhookSender

__all__ = ["AiohttpWebhookSender"]
