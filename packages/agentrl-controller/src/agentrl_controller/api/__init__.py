"""The controller's HTTP surface: the ASGI app (``api.app``), its guard, the dashboard and the wire models."""
