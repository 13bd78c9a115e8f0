"""The route table: every endpoint, its role, body, answer and errors — served and documented
from this one list (the OpenAPI document and the tenant-isolation suite read it too).

Each area's routes live beside their handlers (``ROUTES`` of each ``*_handlers`` module); this
module puts them in the order they are matched in (a literal path before the parameter it
shadows: ``…/aps/alltouse`` before ``…/aps/{apId}``).

The role of a route is declared once, here in the route table (``Route.role``): it is what the
edge requires before the handler runs (credentials for every non-public route, the role on the
organisation named in the path), what the OpenAPI document shows (``x-required-role``) and what
the isolation matrix tests. The use cases hold the authorisation rule that the role names
(``application.access.authorise``), because embedders call them without this edge; the
isolation tests check that the two agree (a caller below the route's role is refused, one
holding it is let through).
"""

from __future__ import annotations

from fourcorner.entrypoints.http import (
    as4_handlers,
    catalogue_handlers,
    handlers,
    member_handlers,
    network_handlers,
    participant_handlers,
    sml_handlers,
    smp_handlers,
    transaction_handlers,
    validation_handlers,
    webhook_handlers,
)
from fourcorner.entrypoints.http.routing import Route


def routes(smp_prefix: str = "/smp", as4_prefix: str = "/as4") -> list[Route]:
    return [
        *handlers.ROUTES,
        *member_handlers.ROUTES,
        *participant_handlers.ROUTES[:1],  # the SMPs to use
        *network_handlers.ROUTES[:1],  # the access points to use, before …/aps/{apId}
        *participant_handlers.ROUTES[1:2],  # can they receive this?
        *network_handlers.ROUTES[1:],
        *participant_handlers.ROUTES[2:],
        *sml_handlers.ROUTES,
        *catalogue_handlers.ROUTES,
        *transaction_handlers.ROUTES,
        *as4_handlers.routes(as4_prefix),
        *validation_handlers.ROUTES,
        *webhook_handlers.ROUTES,
        *smp_handlers.routes(smp_prefix),
    ]
