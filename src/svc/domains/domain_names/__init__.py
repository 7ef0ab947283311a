"""Domains: names an org buys through the registrar (a purchase saga that never charges without
registering) or imports, each with its zone on svc's nameservers (docs/domains.md)."""
