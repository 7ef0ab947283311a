"""Rate limits shared by every svc process of a store: tries counted in the state store."""
