"""DNS zones and record sets of an org, served by the nameserver svc converges from its store."""
