"""In-memory adapters: production code for embedders and the test harness."""

from adapters.memory.storage import InMemoryStorage, InMemoryUnitOfWork

__all__ = ["InMemoryStorage", "InMemoryUnitOfWork"]
