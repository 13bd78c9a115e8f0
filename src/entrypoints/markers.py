"""What the handlers' ``Provide["name"]`` markers name in the container, checked at start.

A handler declares what it needs from the container as parameters defaulting to a marker:
``ctx: Context = Provide["context"]``, ``prefix: str = Provide["config.smp_prefix"]``. A name
is one of the container's providers, or ``config.<name>``: a value of the ``Settings``
object (a field or a computed value). ``check_markers`` runs before the web app opens
anything, so a misspelt marker stops the start with the handler and marker named, instead of
failing the first request that reaches that handler.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs
from dependency_injector import containers

from fourcorner.entrypoints.config import Settings
from fourcorner.entrypoints.http.routing import Route, markers

SETTINGS_PROVIDER = "config"
"""The container's provider of the settings' values, one by one (``config.<name>``)."""

# what ``config.<name>`` may name: the settings' fields and computed values
_SETTINGS_NAMES = frozenset(a.name for a in attrs.fields(Settings)) | frozenset(
    name for name, value in vars(Settings).items() if isinstance(value, property)
)


class UnknownProvider(LookupError):
    """A handler's ``Provide["name"]`` marker names no provider of the container."""


def provider(container: containers.Container, name: str) -> Any:
    """The provider a ``Provide["name"]`` marker names: a provider of ``container``, or
    ``config.<setting>``; ``UnknownProvider`` when there is none."""
    first, _, rest = name.partition(".")
    found = container.providers.get(first)
    if found is None:
        raise UnknownProvider(f"the container has no provider {first!r}")
    if not rest:
        return found
    if first != SETTINGS_PROVIDER:
        raise UnknownProvider(f"{first!r} is a provider without named parts")
    if rest not in _SETTINGS_NAMES:
        raise UnknownProvider(f"the settings have no value {rest!r}")
    return getattr(found, rest)


def check_markers(container: containers.Container, routes: Iterable[Route]) -> None:
    """Every ``Provide["name"]`` marker of the handlers of ``routes`` names a provider of
    ``container``; else ``UnknownProvider`` names each handler, parameter and marker that
    does not."""
    problems = []
    for handler, parameter, name in markers(routes):
        try:
            provider(container, name)
        except UnknownProvider as e:
            where = f"{handler.__module__}.{handler.__qualname__}"
            problems.append(f'{where}: {parameter}=Provide["{name}"]: {e}')
    if problems:
        raise UnknownProvider("; ".join(dict.fromkeys(problems)))
