"""``fourcorner token``: a bearer token signed with the key of the server on this data dir
(``FOURCORNER_AUTH_MODE=local``)."""

from __future__ import annotations

from datetime import timedelta

from fourcorner.entrypoints import preflight
from fourcorner.entrypoints.config import ConfigError, Settings


def token(settings: Settings, email: str, name: str, superadmin: bool, hours: float) -> str:
    """A token for ``email``, valid ``hours``, signed with the server's key."""
    if settings.auth_mode != "local":
        raise ConfigError(
            "tokens are minted only with FOURCORNER_AUTH_MODE=local; in oidc mode your "
            "identity provider issues them"
        )
    from fourcorner.entrypoints.container import build_container

    preflight.token_key(settings)
    container = build_container(settings)
    return str(
        container.token_authority().issue(
            email, name=name, superadmin=superadmin, ttl=timedelta(hours=hours)
        )
    )
