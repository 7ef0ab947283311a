"""svc: a self-hostable control plane for hosting small web projects."""

__version__ = "0.1.0"
