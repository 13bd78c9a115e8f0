"""The wheel installs one top-level package, ``fourcorner``, whose folder is ``src/``: the
layers keep the folders the design names (``src/domain/`` ...) and are imported as
``fourcorner.domain``, ``fourcorner.application``, ``fourcorner.adapters`` and
``fourcorner.entrypoints``, so an embedding system's own modules of those names never clash.
Everything else about the build is in ``pyproject.toml``."""

from setuptools import find_packages, setup

setup(
    package_dir={"fourcorner": "src"},
    packages=["fourcorner", *(f"fourcorner.{name}" for name in find_packages("src"))],
)
