"""AgentRL controller: hosts environment workers and pools their sandboxes behind the AgentRL API."""

__version__ = "0.1.0"

__all__ = ["__version__"]
