"""Blob stores: the file system (default) and memory."""

from fourcorner.adapters.blobs.filesystem import FileBlobStore
from fourcorner.adapters.blobs.memory import InMemoryBlobStore

__all__ = ["FileBlobStore", "InMemoryBlobStore"]
