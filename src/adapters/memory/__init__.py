"""In-memory adapters: production code for embedders and the test harness."""

from fourcorner.adapters.memory.storage import InMemoryStorage, InMemoryUnitOfWork

__all__ = ["InMemoryStorage", "InMemoryUnitOfWork"]
