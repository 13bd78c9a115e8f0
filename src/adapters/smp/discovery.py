"""Finding a receiver's SMP: by DNS through the network's SML (``SmlDiscovery``), or one fixed
SMP for everybody (``FixedDiscovery``, for the embedded test set-up).

SML discovery (the network's SML specification; phax/peppol-commons ``PeppolNaptrURLProvider``):
hash the participant value, lower-cased, with SHA-256; write the digest in Base32 (RFC 4648)
without padding, lower-cased; ask for the NAPTR records of ``<hash>.<scheme>.<zone>``; of those
with flag ``U`` and service ``Meta:SMP``, in (order, preference) order, the first whose regexp
is ``!^.*$!<URL>!`` names the SMP. No such name, or no such record, means the participant is
not registered in that environment (permanent); a DNS timeout or failure is transient.

Answers are cached by dnspython's LRU cache for their TTL (negative answers too), at most
``cache_size`` names. DNS replies are UDP datagrams, bounded by the protocol.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

import dns.asyncresolver
import dns.exception
import dns.nameserver
import dns.resolver
from yarl import URL

from fourcorner.adapters.smp.errors import Problem, SmpLookupError
from fourcorner.domain.network_services import Environment

SMP_SERVICE = "meta:smp"  # compared case-insensitively
CACHE_SIZE = 4096


class Discovery(Protocol):
    async def smp_url(self, participant: tuple[str, str], environment: Environment) -> str:
        """The base URL of the SMP that serves ``participant`` (scheme, value)."""
        ...


def sml_name(scheme: str, value: str, zone: str) -> str:
    """``<base32(sha256(lower(value)))>.<scheme>.<zone>.``, all lower case, absolute."""
    digest = hashlib.sha256(value.strip().lower().encode("utf-8")).digest()
    label = base64.b32encode(digest).decode("ascii").rstrip("=").lower()
    return f"{label}.{scheme.strip().lower()}.{zone.strip().rstrip('.').lower()}."


def terminal_url(regexp: str) -> str | None:
    """The URL of a U-NAPTR regexp of the form ``!^.*$!<URL>!`` (any delimiter that is not
    alphanumeric or a backslash; no flags but ``i``), or None for any other form: a regexp that
    rewrites the name, backreferences, a URL that is not http(s)."""
    if len(regexp) < 2 or regexp[0].isalnum() or regexp[0] == "\\":
        return None
    parts = regexp[1:].split(regexp[0])
    if len(parts) != 3 or parts[0] != "^.*$" or parts[2] not in ("", "i"):
        return None
    url = parts[1]
    if not url or "\\" in url:
        return None
    try:
        parsed = URL(url, encoded=True)
    except ValueError:
        return None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        return None
    return url


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def smp_url_of(records: Iterable[Any], name: str, environment: Environment) -> str:
    """The SMP URL of the NAPTR ``records`` of ``name`` (dnspython NAPTR rdata)."""
    refused: list[str] = []
    for record in sorted(records, key=lambda r: (r.order, r.preference)):
        if _text(record.flags).upper() != "U" or _text(record.service).lower() != SMP_SERVICE:
            continue
        regexp = _text(record.regexp)
        url = terminal_url(regexp)
        if url is not None:
            return url
        refused.append(regexp)
    why = f"no U-NAPTR record with service Meta:SMP at {name}"
    if refused:
        shown = ", ".join(repr(r[:200]) for r in refused[:3])
        why += f" (regexp {shown} is not of the form !^.*$!<http(s) URL>!)"
    raise SmpLookupError(
        f"receiver not registered in {environment.value}: {why}", Problem.NOT_REGISTERED
    )


class FixedDiscovery:
    """Every participant is looked up in one fixed SMP: ``url`` for every environment, or the
    SMP of each environment (a mapping, as the built-in SMP's ``<base>/smp/test`` and
    ``…/prod``)."""

    def __init__(self, url: str | Mapping[Environment, str]) -> None:
        self.url = url

    async def smp_url(self, participant: tuple[str, str], environment: Environment) -> str:
        if isinstance(self.url, str):
            return self.url
        return self.url[environment]

    def __repr__(self) -> str:
        return f"FixedDiscovery({self.url!r})"


class SmlDiscovery:
    """NAPTR discovery in the SML zone of each environment, with dnspython's async resolver.

    ``nameservers``: (address, port) pairs; none means the system's resolvers
    (``/etc/resolv.conf``), read on first use. ``timeout`` bounds one whole lookup.
    """

    def __init__(
        self,
        zones: Mapping[Environment, str],
        nameservers: Sequence[tuple[str, int]] = (),
        *,
        timeout: float = 5.0,
        cache_size: int = CACHE_SIZE,
    ) -> None:
        self.zones = dict(zones)
        self._nameservers = tuple(nameservers)
        self._timeout = timeout
        self._cache_size = cache_size
        self._resolver: dns.asyncresolver.Resolver | None = None

    def _make_resolver(self) -> dns.asyncresolver.Resolver:
        if self._resolver is None:
            try:
                resolver = dns.asyncresolver.Resolver(configure=not self._nameservers)
            except dns.exception.DNSException as e:
                raise SmpLookupError(
                    f"no DNS resolver is configured: {e}", Problem.UNREACHABLE
                ) from None
            if self._nameservers:
                resolver.nameservers = [
                    dns.nameserver.Do53Nameserver(address, port)
                    for address, port in self._nameservers
                ]
            resolver.timeout = self._timeout
            resolver.lifetime = self._timeout
            resolver.cache = dns.resolver.LRUCache(self._cache_size)
            self._resolver = resolver
        return self._resolver

    async def smp_url(self, participant: tuple[str, str], environment: Environment) -> str:
        scheme, value = participant
        name = sml_name(scheme, value, self.zones[environment])
        resolver = self._make_resolver()
        try:
            answer = await resolver.resolve(name, "NAPTR", search=False)
        except dns.resolver.NXDOMAIN:
            raise SmpLookupError(
                f"receiver not registered in {environment.value}: {name} does not exist",
                Problem.NOT_REGISTERED,
            ) from None
        except dns.resolver.NoAnswer:
            raise SmpLookupError(
                f"receiver not registered in {environment.value}: {name} has no NAPTR record",
                Problem.NOT_REGISTERED,
            ) from None
        except dns.exception.Timeout:
            raise SmpLookupError(
                f"the DNS did not answer for {name} within {self._timeout:g} s",
                Problem.UNREACHABLE,
            ) from None
        except dns.resolver.NoNameservers as e:
            raise SmpLookupError(
                f"no DNS server answered for {name}: {e}", Problem.UNREACHABLE
            ) from None
        except (dns.exception.DNSException, OSError) as e:
            raise SmpLookupError(
                f"the DNS lookup of {name} failed: {e!r}", Problem.UNREACHABLE
            ) from None
        return smp_url_of(answer, name, environment)

    def __repr__(self) -> str:
        zones = {e.value: z for e, z in self.zones.items()}
        return f"SmlDiscovery({zones!r}, nameservers={list(self._nameservers)!r})"
