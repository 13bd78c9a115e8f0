"""Publication in the network's directory through its indexer interface."""

from fourcorner.adapters.directory.indexer import IndexerDirectoryPublisher

__all__ = ["IndexerDirectoryPublisher"]
