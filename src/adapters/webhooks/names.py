"""The addresses of a webhook's host, found without threads.

The event loop's ``getaddrinfo`` runs in its default executor, whose few threads blob reads and
writes, upload spooling, AS4 builds and aiohttp's own lookups share; a name server that never
answers would keep them past a delivery's timeout (a call in a thread cannot be cancelled).
So a host is, in this order:

- an IP literal (IPv4 in every form ``inet_aton`` reads, as the system's resolver reads it):
  no lookup;
- a name of the hosts file (read again when it changes, looked at once a second at most), or
  one under ``localhost`` (RFC 6761: the loopback addresses);
- else its A and AAAA records, asked of the system's name servers (``/etc/resolv.conf``: its
  servers, search list and ``ndots``) by dnspython's asyncio resolver, on the event loop,
  within ``lifetime`` seconds, and cancelled with the delivery that waits for them.

IPv4 addresses come first. Nothing is cached here. The caller checks every address found
before it connects to one (``Http1Client``'s ``check``).
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import socket
from collections.abc import Sequence

import dns.asyncresolver
import dns.exception
import dns.nameserver
import dns.resolver

from fourcorner.domain.webhook_target import legacy_ipv4

HOSTS_FILE = "/etc/hosts"
_HOSTS_LOOKED_AT_EVERY = 1.0  # seconds
_LOOPBACK = [(socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")]
_RECORDS = ((socket.AF_INET, "A"), (socket.AF_INET6, "AAAA"))

Address = tuple[int, str]  # (address family, address)


def literal(host: str) -> Address | None:
    """``host`` as an address when it is an IP literal, else None."""
    try:
        ip: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(host)
    except ValueError:
        found = legacy_ipv4(host)
        if found is None:
            return None
        ip = found
    return (socket.AF_INET6 if ip.version == 6 else socket.AF_INET, str(ip))


def read_hosts(text: str) -> dict[str, list[Address]]:
    """The names of a hosts file and their addresses, in the file's order."""
    names: dict[str, list[Address]] = {}
    for line in text.splitlines():
        fields = line.partition("#")[0].split()
        if len(fields) < 2:
            continue
        address = literal(fields[0].partition("%")[0])
        if address is None:
            continue
        for name in fields[1:]:
            seen = names.setdefault(name.lower().rstrip("."), [])
            if address not in seen:
                seen.append(address)
    return names


class HostResolver:
    """``addresses(host)``; ``nameservers`` ((address, port) pairs) instead of the system's,
    ``hosts_file`` instead of ``/etc/hosts``."""

    def __init__(
        self,
        *,
        lifetime: float = 15.0,
        nameservers: Sequence[tuple[str, int]] = (),
        hosts_file: str = HOSTS_FILE,
    ) -> None:
        self._lifetime = lifetime
        self._nameservers = tuple(nameservers)
        self._hosts_file = hosts_file
        self._hosts: dict[str, list[Address]] = {}
        self._hosts_version: tuple[int, int] | None = None
        self._hosts_next_look = 0.0
        self._resolver: dns.asyncresolver.Resolver | None = None

    async def addresses(self, host: str) -> list[Address]:
        """``host``'s addresses, IPv4 first. Raises ``OSError`` when it has none or the name
        servers fail, ``TimeoutError`` when they do not answer within the lifetime."""
        found = literal(host)
        if found is not None:
            return [found]
        name = host.lower().rstrip(".")
        known = self._hosts_names().get(name)
        if known:
            return list(known)
        if name == "localhost" or name.endswith(".localhost"):
            return list(_LOOPBACK)
        return await self._lookup(host, name)

    def _hosts_names(self) -> dict[str, list[Address]]:
        now = asyncio.get_running_loop().time()
        if now < self._hosts_next_look:
            return self._hosts
        self._hosts_next_look = now + _HOSTS_LOOKED_AT_EVERY
        try:
            stat = os.stat(self._hosts_file)
            version = (stat.st_mtime_ns, stat.st_size)
            if version != self._hosts_version:
                with open(self._hosts_file, encoding="utf-8", errors="replace") as f:
                    self._hosts = read_hosts(f.read(1024 * 1024))
                self._hosts_version = version
        except OSError:
            self._hosts, self._hosts_version = {}, None
        return self._hosts

    def _dns(self) -> dns.asyncresolver.Resolver:
        if self._resolver is None:
            try:
                resolver = dns.asyncresolver.Resolver(configure=not self._nameservers)
            except dns.exception.DNSException as e:
                raise OSError(f"no DNS resolver is configured: {e}") from None
            if self._nameservers:
                resolver.nameservers = [
                    dns.nameserver.Do53Nameserver(address, port)
                    for address, port in self._nameservers
                ]
            resolver.lifetime = self._lifetime
            self._resolver = resolver
        return self._resolver

    async def _lookup(self, host: str, name: str) -> list[Address]:
        resolver = self._dns()
        answers = await asyncio.gather(
            *(resolver.resolve(name, rdtype, search=True) for _, rdtype in _RECORDS),
            return_exceptions=True,
        )
        found: list[Address] = []
        problems: list[BaseException] = []
        for (family, _), answer in zip(_RECORDS, answers, strict=True):
            if isinstance(answer, dns.resolver.Answer):
                found += [(family, record.to_text()) for record in answer]
            elif not isinstance(answer, dns.resolver.NXDOMAIN | dns.resolver.NoAnswer):
                problems.append(answer)
        if found:
            return list(dict.fromkeys(found))
        for problem in problems:
            if isinstance(problem, dns.exception.Timeout):
                raise TimeoutError(f"the DNS did not answer for {host}")
        for problem in problems:
            if not isinstance(problem, dns.exception.DNSException | OSError):
                raise problem  # not the lookup's own failure (a cancellation is raised by gather)
        if problems:
            raise OSError(f"{host} cannot be resolved: {problems[0]}")
        raise OSError(f"{host} has no address")
