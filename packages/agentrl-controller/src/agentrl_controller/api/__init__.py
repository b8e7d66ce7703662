"""The controller's routes: the ASGI app (``api.app``), its guard and the dashboard (models and fast path: ``http``)."""
