"""Publication in the network's directory through its indexer interface."""

from adapters.directory.indexer import IndexerDirectoryPublisher

__all__ = ["IndexerDirectoryPublisher"]
