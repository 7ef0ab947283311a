"""Shared test machinery: state stores, a running app, API clients."""
