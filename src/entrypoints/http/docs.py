"""``GET /docs``: the OpenAPI document rendered by Swagger UI, served from the installed
``swagger-ui-py`` package (no CDN)."""

from __future__ import annotations

import mimetypes
from functools import cache
from importlib.resources import files
from pathlib import Path

from aiohttp import web

from fourcorner.domain.errors import NotFound
from fourcorner.entrypoints.http.routing import Reply, Req

ASSETS = (
    "swagger-ui.css",
    "index.css",
    "swagger-ui-bundle.js",
    "swagger-ui-standalone-preset.js",
    "favicon-32x32.png",
)

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>fourcorner API</title>
<link rel="stylesheet" href="/docs/static/swagger-ui.css">
<link rel="icon" type="image/png" href="/docs/static/favicon-32x32.png">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/static/swagger-ui-bundle.js"></script>
<script src="/docs/static/swagger-ui-standalone-preset.js"></script>
<script>
window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
  layout: "BaseLayout"
});
</script>
</body>
</html>
"""


@cache
def _static() -> Path:
    return Path(str(files("swagger_ui") / "static"))


async def page(req: Req) -> Reply:
    return Reply(200, web.Response(text=PAGE, content_type="text/html"))


async def asset(req: Req) -> Reply:
    name = req.path("name")
    if name not in ASSETS:
        raise NotFound(resource="file", ident=name)
    path = _static() / name
    ctype = mimetypes.guess_type(name)[0] or "application/octet-stream"
    return Reply(
        200,
        web.FileResponse(path, headers={"Content-Type": ctype, "Cache-Control": "max-age=86400"}),
    )
