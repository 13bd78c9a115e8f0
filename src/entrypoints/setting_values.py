"""How a setting's text (from the environment, or a TOML value) becomes its value: whole
and decimal numbers, true or false, paths, DNS servers, networks of trusted proxies; and what
is wrong with a base URL or with a file of CA certificates.
A refusal is a ``ValueError`` (``url_problem``: the text) that completes the sentence
"<setting>=<value> ..."; ``entrypoints.config`` names the setting."""

from __future__ import annotations

import contextlib
import ipaddress
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from cryptography import x509

PREFIX = "FOURCORNER_"  # of every setting's name in the environment


def to_bool(text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off", ""):
        return False
    raise ValueError("is not true or false")


def nameservers(text: str) -> tuple[tuple[str, int], ...]:
    """``host[:port]`` items, comma-separated: IPv4 (``1.2.3.4:53``), IPv6 (``[::1]:53`` or
    ``::1``). DNS servers are named by address, as in resolv.conf."""
    out: list[tuple[str, int]] = []
    for item in (x.strip() for x in text.split(",")):
        if not item:
            continue
        host, port = item, "53"
        if item.startswith("["):
            host, bracket, rest = item[1:].partition("]")
            if not bracket or (rest and not rest.startswith(":")):
                raise ValueError(f"{item!r} is not host[:port]")
            port = rest[1:] or "53"
        elif item.count(":") == 1:
            host, port = item.split(":")
        try:
            address = str(ipaddress.ip_address(host))
        except ValueError:
            raise ValueError(
                f"{host!r} is not an IP address; name each DNS server by its address "
                "(host[:port], comma-separated), as resolv.conf does"
            ) from None
        if not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
            raise ValueError(f"{item!r}: {port!r} is not a port number")
        out.append((address, int(port)))
    return tuple(out)


Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def networks(text: str) -> tuple[Network, ...]:
    """IP addresses and networks in CIDR notation, comma-separated (``10.0.0.5``,
    ``10.0.0.0/24``, ``2001:db8::/64``): the trusted reverse proxies. An entry that is neither
    (a name, a zone index such as ``%eth0``), a network written with bits set past its prefix
    (``10.0.0.5/24``: the network, or the one address?) and one that holds every address
    (``/0``: any client could then name itself anything) are refused by name."""
    out: list[Network] = []
    for item in (x.strip() for x in text.split(",")):
        if not item:
            continue
        out.append(_network(item))
        if not out[-1].prefixlen:
            raise ValueError(
                f"{item!r} is every address: any client could name itself anything; list "
                "the proxies' addresses or networks only"
            )
    return tuple(out)


def _network(item: str) -> Network:
    exact: Network | None = None
    loose: Network | None = None
    if "%" not in item:
        with contextlib.suppress(ValueError):
            exact = ipaddress.ip_network(item)
        with contextlib.suppress(ValueError):
            loose = ipaddress.ip_network(item, strict=False)
    if exact is not None:
        return exact
    if loose is not None:
        raise ValueError(
            f"{item!r} has bits set past its prefix; write the network as {loose} or the "
            f"one address as {item.partition('/')[0]}"
        )
    raise ValueError(
        f"{item!r} is not an IP address or a network in CIDR notation; name each proxy by "
        "address (10.0.0.5, 2001:db8::5) or network (10.0.0.0/24)"
    )


def convert(kind: Any, raw: Any) -> Any:
    """``raw`` (text from the environment, or a TOML value) as a value of the field type."""
    if isinstance(raw, dict | list):
        raise ValueError("is not a single value")
    if kind in (bool, "bool"):
        if isinstance(raw, bool):
            return raw
        return to_bool(str(raw))
    if kind in (int, "int"):
        if isinstance(raw, bool | float) or not re.fullmatch(r"\s*[+-]?[0-9_]+\s*", str(raw)):
            raise ValueError("is not a whole number")
        return int(raw)
    if kind in (float, "float"):
        try:
            if isinstance(raw, bool):
                raise ValueError
            value = float(raw)
        except (TypeError, ValueError):
            raise ValueError("is not a number") from None
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError("is not a finite number")
        return value
    if kind in (Path, "Path"):
        return Path(str(raw))
    return str(raw)


def url_problem(url: str) -> str | None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "is not an absolute http:// or https:// URL"
    if parts.query or parts.fragment:
        return "has a query or fragment; give the base URL only"
    return None


def pem_certificates_problem(path: str) -> str | None:
    """What keeps the file ``path`` from being a bundle of PEM certificates (a TLS client's
    CAs), or None when it is one."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        return f"cannot be read ({(e.strerror or str(e)).lower()})"
    try:
        x509.load_pem_x509_certificates(data)
    except ValueError:
        return "holds no PEM certificate (or one that cannot be parsed)"
    return None
