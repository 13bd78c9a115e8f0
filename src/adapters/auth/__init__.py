"""Identity adapters: bearer-token verifiers for ``application.identity.TokenVerifier``."""

from adapters.auth.cache import CachingTokenVerifier
from adapters.auth.local import LocalTokenAuthority
from adapters.auth.oidc import OidcTokenVerifier

__all__ = ["CachingTokenVerifier", "LocalTokenAuthority", "OidcTokenVerifier"]
