"""The built-in SMP's read interface: ServiceGroup, SignedServiceMetadata, business card.

Each environment has its own SMP under the SMP prefix, ``/smp/test`` and ``/smp/prod``
(``network_services.smp_url``): each serves only the participants of its environment, and
answers 404 for the others.

Identifiers arrive percent-encoded in one path segment each (``iso6523-actorid-upis%3A%3A...``);
they are read from the raw path, so they are decoded exactly once.
"""

from __future__ import annotations

from aiohttp import web
from dependency_injector.wiring import Provide

from fourcorner.adapters.smp.reader import SmpReader
from fourcorner.domain.errors import NotFound
from fourcorner.domain.network_services import Environment, environment_of_segment
from fourcorner.entrypoints.http.rendering import XML as XML_DOCUMENT
from fourcorner.entrypoints.http.routing import Reply, Req, Route

XML = "text/xml"


def _segments(req: Req, prefix: str) -> tuple[Environment, list[str]]:
    """The environment of the SMP asked, and the raw (still percent-encoded) path segments
    after its base URL (``<prefix>/<environment>``)."""
    raw = req.raw.raw_path.split("?", 1)[0]
    first, *rest = raw[len(prefix) :].strip("/").split("/")
    environment = environment_of_segment(first)
    if environment is None:  # the route's {environment}: test or prod only
        raise NotFound(resource="SMP", ident=first)
    return environment, rest


def _xml(body: bytes) -> Reply:
    return Reply(200, web.Response(body=body, content_type=XML, charset="utf-8"))


async def service_group(
    req: Req,
    reader: SmpReader = Provide["smp_reader"],
    prefix: str = Provide["config.smp_prefix"],
) -> Reply:
    environment, segments = _segments(req, prefix)
    if len(segments) != 1:
        raise NotFound(resource="participant", ident="/".join(segments))
    return _xml(await reader.service_group(environment, segments[0]))


async def service_metadata(
    req: Req,
    reader: SmpReader = Provide["smp_reader"],
    prefix: str = Provide["config.smp_prefix"],
) -> Reply:
    environment, segments = _segments(req, prefix)
    if len(segments) != 3 or segments[1] != "services":
        raise NotFound(resource="service metadata", ident="/".join(segments))
    return _xml(await reader.service_metadata(environment, segments[0], segments[2]))


async def business_card(
    req: Req,
    reader: SmpReader = Provide["smp_reader"],
    prefix: str = Provide["config.smp_prefix"],
) -> Reply:
    environment, segments = _segments(req, prefix)
    segments = segments[1:]  # after "businesscard"
    if len(segments) != 1:
        raise NotFound(resource="business card", ident="/".join(segments))
    return _xml(await reader.business_card(environment, segments[0]))


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
