"""Publication in the network's directory of each environment through its indexer interface."""

from fourcorner.adapters.directory.indexer import EnvironmentDirectories, IndexerDirectoryPublisher

__all__ = ["EnvironmentDirectories", "IndexerDirectoryPublisher"]
