"""The aiohttp interface: routes, middlewares and the JSON shape of the service."""
