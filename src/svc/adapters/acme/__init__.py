"""Certificates over ACME (port.py): the acme library's client (client.py), and pebble, the test CA
svc can run through its supervisor (pebble.py)."""
