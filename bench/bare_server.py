"""The baseline: a bare aiohttp handler answering fixed bytes from memory, on uvloop's event
loop as `fourcorner serve` is (the same loop on both sides of the ratio), or on asyncio's
(aiohttp's default) when the third argument says so."""

import sys

import uvloop
from aiohttp import web


def main() -> None:
    port, body_file = int(sys.argv[1]), sys.argv[2]
    loop = sys.argv[3] if len(sys.argv) > 3 else "uvloop"
    body = open(body_file, "rb").read()  # noqa: SIM115

    async def handler(request: web.Request) -> web.Response:
        return web.Response(body=body, content_type="application/json")

    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    web.run_app(
        app,
        host="127.0.0.1",
        port=port,
        access_log=None,
        print=None,
        loop=uvloop.new_event_loop() if loop == "uvloop" else None,
    )


if __name__ == "__main__":
    main()
