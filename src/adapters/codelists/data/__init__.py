"""Package data: the network's code lists, release 9.7 (see README.md here)."""
