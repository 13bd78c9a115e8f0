"""Blob stores: the file system (default) and memory."""

from adapters.blobs.filesystem import FileBlobStore
from adapters.blobs.memory import InMemoryBlobStore

__all__ = ["FileBlobStore", "InMemoryBlobStore"]
