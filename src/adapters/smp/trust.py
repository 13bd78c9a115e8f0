"""What a sender trusts in one environment: the SMPs whose signed answers it believes, the
access points it encrypts for, and the peers it talks to over plain http.

``Trust`` holds two certificate checks, built by the composition root from the trust anchors
(each raises ``ValueError`` saying why a certificate is refused): an SMP's signing certificate
must chain to the environment's SMP CA, an endpoint's certificate to its AP CA, and both must
be valid now. ``plain_http_refused`` is the rule for the URLs of peers (SMPs, access points):
https, or plain http only to a loopback address unless http peers are allowed outright.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from datetime import datetime

import attrs
from cryptography import x509
from yarl import URL

CertificateCheck = Callable[[x509.Certificate, datetime], None]


@attrs.frozen
class Trust:
    """The certificate checks of one environment; each raises ``ValueError`` with the reason."""

    smp: CertificateCheck  # a certificate that signs an SMP's answers
    access_point: CertificateCheck  # a certificate an SMP publishes for an endpoint


def is_loopback(host: str) -> bool:
    """``localhost``, 127.0.0.0/8 or ``::1`` (an IP literal; names are not resolved here), and
    the unspecified ``0.0.0.0`` / ``::``, which a connection takes to this very host (the
    default public URL of a server listening on every interface)."""
    name = host.strip("[]").rstrip(".").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def plain_http_refused(url: URL, *, allow_http: bool) -> bool:
    """Whether ``url`` is plain http to a peer the service may not reach that way."""
    return url.scheme == "http" and not allow_http and not is_loopback(url.host or "")
