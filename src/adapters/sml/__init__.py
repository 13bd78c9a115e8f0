"""The network's SML (service metadata locator): its SOAP management interface."""

from fourcorner.adapters.sml.soap import SmlEndpoint, SoapLocator

__all__ = ["SmlEndpoint", "SoapLocator"]
