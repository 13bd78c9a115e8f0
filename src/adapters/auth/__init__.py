"""Identity adapters: bearer-token verifiers for ``application.identity.TokenVerifier``."""

from fourcorner.adapters.auth.cache import CachingTokenVerifier
from fourcorner.adapters.auth.local import LocalTokenAuthority
from fourcorner.adapters.auth.oidc import OidcTokenVerifier

__all__ = ["CachingTokenVerifier", "LocalTokenAuthority", "OidcTokenVerifier"]
