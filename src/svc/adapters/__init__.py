"""One port (a typing.Protocol) per external system, and the backends that implement it."""
