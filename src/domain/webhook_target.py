"""Where a webhook may point: its URL's form, and the hosts and addresses a delivery must not
go to (private, loopback, link-local and metadata targets, in every form a resolver reads),
checked when a webhook is made or changed and again after DNS on every delivery."""

from __future__ import annotations

import functools
import ipaddress
import re
import unicodedata
from urllib.parse import urlsplit

from fourcorner.domain.errors import Detail, InvalidInput

_METADATA_HOSTS = {"metadata.google.internal", "metadata", "instance-data"}
_METADATA_IP = ipaddress.IPv4Address("169.254.169.254")
# IANA's special-purpose IPv4 blocks that are not globally reachable, listed here because
# ``is_global`` differs between Python releases (192.0.0.0/24 is global to 3.11)
_NOT_GLOBAL_V4 = tuple(
    ipaddress.IPv4Network(n)
    for n in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.0.2.0/24",
        "192.88.99.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/4",
        "240.0.0.0/4",
    )
)
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")
_DOTS = str.maketrans({"\u3002": ".", "\uff0e": ".", "\uff61": "."})  # IDNA's full stops
_IPV4_PART = re.compile(r"0x[0-9a-f]+|0[0-7]*|[1-9][0-9]*")
_NUMBER = re.compile(r"[0-9]+|0x[0-9a-f]*")
_LABEL = re.compile(r"[\w-]+")  # letters and digits of any script, "_" and "-"
_LOOPBACK = "loopback addresses are not allowed as webhook targets"
_INVALID_HOST = "the url's host is neither a valid host name nor an IP address"


def legacy_ipv4(name: str) -> ipaddress.IPv4Address | None:
    """The address ``name`` stands for in the forms ``inet_aton`` reads (and so the resolver):
    one to four parts, decimal, octal (leading 0) or hex (0x), the last filling the remaining
    bytes (``127.1``, ``2130706433``, ``0177.0.0.1``, ``0x7f.1``); None if it is not one."""
    parts = name.lower().split(".")
    if len(parts) > 4 or not all(_IPV4_PART.fullmatch(p) for p in parts):
        return None
    values = [int(p, 16) if p.startswith("0x") else int(p, 8 if p[0] == "0" else 10) for p in parts]
    *head, last = values
    if any(v > 255 for v in head) or last >= 256 ** (5 - len(values)):
        return None
    number = last
    for i, v in enumerate(head):
        number |= v << (8 * (3 - i))
    return ipaddress.IPv4Address(number)


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries: mapped, 6to4, NAT64 or IPv4-compatible."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64 or (ip in _IPV4_COMPATIBLE and int(ip) > 1):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def _ip_problem(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded_ipv4(ip)
        if inner is not None:
            problem = _ip_problem(inner)
            if problem:
                return problem
    if ip.is_loopback:
        return _LOOPBACK
    if ip.is_unspecified:
        return "the unspecified address (it reaches this host) is not allowed as a webhook target"
    if ip == _METADATA_IP or ip.is_link_local:
        return "link-local and metadata addresses are not allowed as webhook targets"
    special = isinstance(ip, ipaddress.IPv4Address) and any(ip in n for n in _NOT_GLOBAL_V4)
    if special or not ip.is_global or ip.is_private or ip.is_reserved or ip.is_multicast:
        return (
            "private, shared, reserved and multicast addresses are not allowed as webhook targets"
        )
    return None


def _resolver_name(text: str) -> str:
    """A host name as the resolver reads it: after Unicode compatibility mapping (full-width
    digits, ideographic full stops), lower-cased, without the root's trailing dot."""
    return unicodedata.normalize("NFKC", text).translate(_DOTS).lower().removesuffix(".")


def address_problem(host: str) -> str | None:
    """Why a delivery must not go to ``host`` (an IP literal or a name), or None.

    The host is read as the resolver would: IPv6 literals with the IPv4 address they carry,
    IPv4 in every form ``inet_aton`` takes, names after Unicode compatibility mapping (so
    full-width digits and ideographic full stops are what IDNA makes of them) and without the
    root's trailing dot. Single-label names (``intranet``, ``localhost``) resolve on the local
    network, and a name ending in a number is no name: both are refused."""
    text = host.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if ":" in text:
        try:
            return _ip_problem(ipaddress.IPv6Address(text))
        except ValueError:
            return _INVALID_HOST
    name = _resolver_name(text)
    ip = legacy_ipv4(name)
    if ip is not None:
        return _ip_problem(ip)
    labels = name.split(".")
    if not all(_LABEL.fullmatch(label) for label in labels) or _NUMBER.fullmatch(labels[-1]):
        return _INVALID_HOST
    if labels[-1] == "localhost" or name == "localhost.localdomain":
        return _LOOPBACK
    if name in _METADATA_HOSTS:
        return "cloud metadata addresses are not allowed as webhook targets"
    if len(labels) == 1:
        return "single-label host names (local network names) are not allowed as webhook targets"
    return None


_DEFAULT_PORTS = {"http": 80, "https": 443}


def host_of(url: str) -> tuple[str, int]:
    """The host and port a delivery to ``url`` goes to, one spelling for all the spellings of
    one host that a URL may hold, so that bounds by host count them as one: no user or
    password; a name after Unicode compatibility mapping and IDNA's full stops, lower-cased,
    without the root's trailing dot, in IDNA's ASCII form (``xn--``); an IPv4 address in
    dotted-decimal form, however ``inet_aton`` reads it, also when an IPv6 literal maps it
    (``::ffff:a.b.c.d``); another IPv6 literal compressed, without brackets; the port the
    scheme's default when none is written. Another name of the same machine (a CNAME, its
    address) is another host."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        port = parts.port
    except ValueError:  # not a port (``check_url`` refuses it): the text as a host of its own
        return host, -1
    if port is None:
        port = _DEFAULT_PORTS.get(parts.scheme.lower(), 0)
    if ":" in host:  # urlsplit takes the brackets off an IPv6 literal
        try:
            ip = ipaddress.IPv6Address(host)
        except ValueError:
            return host, port
        return str(ip.ipv4_mapped or ip), port
    name = _resolver_name(host)
    address = legacy_ipv4(name)
    if address is not None:
        return str(address), port
    try:
        return name.encode("idna").decode("ascii"), port
    except UnicodeError:  # not a name IDNA takes (an empty or overlong label): as written
        return name, port


def host_text(host: tuple[str, int]) -> str:
    """A host and port (``host_of``) as one text, as a delivery stores it for the claims that
    leave out full hosts: ``name:port``, an IPv6 literal in brackets (``[::1]:443``)."""
    name, port = host
    return f"[{name}]:{port}" if ":" in name else f"{name}:{port}"


@functools.lru_cache(maxsize=4096)
def host_key(url: str) -> str:
    """``host_text(host_of(url))``: the host a delivery to ``url`` holds, kept for the URLs
    seen lately (each delivery raised, and each claimed, asks)."""
    return host_text(host_of(url))


def check_url(url: str, *, allow_private: bool) -> None:
    """A webhook's URL: http(s), a host, a port other than 0, at most 2000 characters; unless
    private targets are allowed, no host ``address_problem`` refuses (checked again on every
    delivery, after DNS)."""
    problem = _url_problem(url, allow_private)
    if problem:
        raise InvalidInput([Detail("$.url", problem)])


def _url_problem(url: str, allow_private: bool) -> str | None:
    if len(url) > 2000:
        return "the url is longer than 2000 characters"
    if any(c.isspace() or c == "\\" or not c.isprintable() for c in url):
        return "the url holds spaces, backslashes or control characters"
    try:
        parts = urlsplit(url)
        port = parts.port  # raises on a port that is not a number below 65536
    except ValueError as e:
        return f"the url is not valid ({e})"
    if port == 0:  # no connection is made to it: every delivery would fail
        return "the url's port is 1 to 65535, not 0"
    if parts.scheme not in ("http", "https"):
        return "the url is http or https"
    if not parts.hostname:
        return "the url names no host"
    return None if allow_private else address_problem(parts.hostname)
