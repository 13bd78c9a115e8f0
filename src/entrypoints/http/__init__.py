"""The aiohttp interface: routes, the wrapper around them and the JSON shape of the service."""
