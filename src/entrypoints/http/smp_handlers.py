"""The built-in SMP's read interface: ServiceGroup, SignedServiceMetadata, business card.

Each environment has its own SMP under the SMP prefix, ``/smp/test`` and ``/smp/prod``
(``network_services.smp_url``): each serves only the participants of its environment, and
answers 404 for the others.

Identifiers arrive percent-encoded in one path segment each (``iso6523-actorid-upis%3A%3A...``);
they are read from the raw path, so they are decoded exactly once.

An answer may change at any moment (a participant removed, a document type added, an access
point's certificate replaced), and a sender that used a stale one would send to an endpoint
that is no longer the participant's. So every answer is ``Cache-Control: no-cache``: a cache
(an access point's, a proxy's) may keep it but asks again before each use, with the answer's
``ETag`` (a digest of its bytes) in ``If-None-Match``, and is answered ``304 Not Modified``
without a body while the answer is unchanged. A lifetime (``max-age``) would save that round
trip but serve a removed endpoint for as long.
"""

from __future__ import annotations

import base64
import hashlib

from aiohttp import ETag, hdrs, web
from dependency_injector.wiring import Provide

from fourcorner.adapters.smp.reader import SmpReader
from fourcorner.domain.errors import NotFound
from fourcorner.domain.network_services import Environment, environment_of_segment
from fourcorner.entrypoints.http.rendering import XML as XML_DOCUMENT
from fourcorner.entrypoints.http.routing import Reply, Req, Route

XML = "text/xml"
CACHE_CONTROL = "no-cache"  # kept, but asked for again before each use (module docstring)


def _segments(req: Req, prefix: str) -> tuple[Environment, list[str]]:
    """The environment of the SMP asked, and the raw (still percent-encoded) path segments
    after its base URL (``<prefix>/<environment>``)."""
    raw = req.raw.raw_path.split("?", 1)[0]
    first, *rest = raw[len(prefix) :].strip("/").split("/")
    environment = environment_of_segment(first)
    if environment is None:  # the route's {environment}: test or prod only
        raise NotFound(resource="SMP", ident=first)
    return environment, rest


def entity_tag(body: bytes) -> str:
    """The ``ETag`` of an answer: 128 bits of its SHA-256, the same for the same bytes (the
    signature of a document is the same for the same document: RSA PKCS #1 v1.5)."""
    return base64.urlsafe_b64encode(hashlib.sha256(body).digest()[:16]).rstrip(b"=").decode()


def _unchanged(request: web.Request, tag: str) -> bool:
    """Whether ``If-None-Match`` names ``tag`` (compared weakly, RFC 9110 13.1.2) or is ``*``,
    bare: aiohttp reads the tag ``"*"`` as the wildcard too, and that is a tag like another."""
    if any(v.strip() == "*" for v in request.headers.getall(hdrs.IF_NONE_MATCH, ())):
        return True
    asked: tuple[ETag, ...] | None = request.if_none_match
    return asked is not None and any(t.value == tag for t in asked)


def _xml(req: Req, body: bytes) -> Reply:
    tag = entity_tag(body)
    headers = {"Cache-Control": CACHE_CONTROL}
    if _unchanged(req.raw, tag):
        answer = web.Response(status=304, headers=headers)
    else:
        answer = web.Response(body=body, content_type=XML, charset="utf-8", headers=headers)
    answer.etag = tag
    return Reply(answer.status, answer)


async def service_group(
    req: Req,
    reader: SmpReader = Provide["smp_reader"],
    prefix: str = Provide["config.smp_prefix"],
) -> Reply:
    environment, segments = _segments(req, prefix)
    if len(segments) != 1:
        raise NotFound(resource="participant", ident="/".join(segments))
    return _xml(req, await reader.service_group(environment, segments[0]))


async def service_metadata(
    req: Req,
    reader: SmpReader = Provide["smp_reader"],
    prefix: str = Provide["config.smp_prefix"],
) -> Reply:
    environment, segments = _segments(req, prefix)
    if len(segments) != 3 or segments[1] != "services":
        raise NotFound(resource="service metadata", ident="/".join(segments))
    return _xml(req, await reader.service_metadata(environment, segments[0], segments[2]))


async def business_card(
    req: Req,
    reader: SmpReader = Provide["smp_reader"],
    prefix: str = Provide["config.smp_prefix"],
) -> Reply:
    environment, segments = _segments(req, prefix)
    segments = segments[1:]  # after "businesscard"
    if len(segments) != 1:
        raise NotFound(resource="business card", ident="/".join(segments))
    return _xml(req, await reader.business_card(environment, segments[0]))


def routes(smp_prefix: str = "/smp") -> tuple[Route, ...]:
    """The SMP of each environment: ``{environment}`` is ``test`` or ``prod`` (else 404)."""
    smp_prefix += "/{environment}"
    return (
        Route(
            "GET",
            smp_prefix + "/businesscard/{participant}",
            business_card,
            "The participant's directory business card (v3), in its environment's SMP.",
            None,
            "smp",
            response=XML_DOCUMENT,
            content_type="text/xml",
        ),
        Route(
            "GET",
            smp_prefix + "/{participant}",
            service_group,
            "ServiceGroup: the participant's service metadata references, in its environment's SMP.",
            None,
            "smp",
            response=XML_DOCUMENT,
            content_type="text/xml",
        ),
        Route(
            "GET",
            smp_prefix + "/{participant}/services/{documentType}",
            service_metadata,
            "SignedServiceMetadata of one document type, signed by the SMP certificate.",
            None,
            "smp",
            response=XML_DOCUMENT,
            content_type="text/xml",
            errors=("AT-1501",),
        ),
    )
