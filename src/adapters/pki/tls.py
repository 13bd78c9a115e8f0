"""TLS client contexts that present one of the operator's certificates: the SMP certificate of
an environment, as the network's SML and directory authenticate an SMP by it."""

from __future__ import annotations

import os
import ssl
import tempfile


def client_context(
    cert_pem: str, key_pem: str, chain_pem: str = "", cafile: str | None = None
) -> ssl.SSLContext:
    """A context that verifies the server under ``cafile`` (default: the system's CAs) and
    presents ``cert_pem`` (the chain sent after it) with its key ``key_pem``. Raises
    ``ssl.SSLError`` or ``OSError`` when they cannot be used together."""
    context = ssl.create_default_context(cafile=cafile or None)
    # load_cert_chain reads files only: the PEMs go to a private file for the moment
    with tempfile.TemporaryDirectory(prefix="fourcorner-tls-") as folder:
        cert = os.path.join(folder, "cert.pem")
        key = os.path.join(folder, "key.pem")
        for path, text in ((cert, cert_pem + "\n" + chain_pem), (key, key_pem)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(text)
        context.load_cert_chain(cert, key)
    return context
