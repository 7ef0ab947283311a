"""workerd's configuration, in Cap'n Proto text: the same for every process of the runtime, and
the same whatever projects exist (a project's worker is loaded on demand by the dispatcher, not
named here), so a deploy, a rollback or a secret change never rewrites it.

    services  dispatcher  svc's worker (dispatcher.js): the one a socket serves
              svc         svc's API (the worker's code and bindings, the logs), proved by the
                          runtime token workerd adds to each request
              sites       the edge's server of the deployments' files (env.ASSETS), proved by
                          the same token: workerd reads no file of svc's
              internet    what a project's fetch() reaches: public addresses only
    sockets   http        127.0.0.1:<port>, the address the edge proxies to

The schema is workerd's own (src/workerd/server/workerd.capnp in workerd's sources)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DISPATCHER = Path(__file__).with_name("dispatcher.js")
# The dispatcher's own compatibility date (svc's code, not a project's): ctx.exports needs its flag.
DISPATCHER_DATE = "2025-06-01"
# What a project's worker may connect to (kj's restrictPeers syntax): the public internet; never
# loopback, private, link-local or unix addresses (svc's API, PowerDNS's API, the state store,
# another project's socket, a cloud's metadata service).
NETWORK_ALLOW = ("public",)
NETWORK_DENY = ("private", "local", "unix", "unix-abstract")


class WorkerdConfigError(ValueError):
    """A value cannot be written into the configuration (svc's own input: a bug if it happens)."""


@dataclass(frozen=True)
class RuntimeOptions:
    listen_host: str
    listen_port: int
    # svc's API and the edge's files server as workerd reaches them: host:port.
    api_address: str
    assets_address: str
    # Sent by the edge to workerd and by workerd to svc (X-Svc-Runtime-Token); made per start.
    token: str
    # The V8 heap of one isolate, in MB (Cloudflare's limit is 128): a worker that passes it ends
    # its process, which the supervisor starts again (docs/workers.md, "Limits").
    memory_mb: int = 128


def text(value: str) -> str:
    """A Cap'n Proto text literal."""
    out = []
    for c in value:
        if c in '"\\':
            out.append("\\" + c)
        elif c == "\n":
            out.append("\\n")
        elif c == "\t":
            out.append("\\t")
        elif ord(c) < 32 or ord(c) == 127:
            raise WorkerdConfigError(f"cannot write {value!r} into workerd's config")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def _list(values: tuple[str, ...]) -> str:
    return "[" + ", ".join(text(v) for v in values) + "]"


def render(options: RuntimeOptions, dispatcher: str | None = None) -> str:
    """The configuration, whole in one text: the dispatcher's source is in it (workerd reads the
    configuration on its standard input, and no other file)."""
    source = dispatcher if dispatcher is not None else DISPATCHER.read_text()
    listen = f"{options.listen_host}:{options.listen_port}"
    if ":" in options.listen_host:
        listen = f"[{options.listen_host}]:{options.listen_port}"
    return f"""# Written by svc at each start of the worker runtime; edits are lost (docs/workers.md).
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  v8Flags = [{text(f"--max-old-space-size={options.memory_mb}")}],
  services = [
    (name = "dispatcher", worker = (
      modules = [(name = {text(DISPATCHER.name)}, esModule = {text(source)})],
      compatibilityDate = {text(DISPATCHER_DATE)},
      compatibilityFlags = ["enable_ctx_exports"],
      bindings = [
        (name = "LOADER", workerLoader = ()),
        (name = "SVC", service = "svc"),
        (name = "SITES", service = "sites"),
        (name = "INTERNET", service = "internet"),
        (name = "TOKEN", text = {text(options.token)}),
      ],
    )),
    (name = "svc", external = (
      address = {text(options.api_address)},
      http = (injectRequestHeaders = [(name = "X-Svc-Runtime-Token", value = {text(options.token)})]),
    )),
    (name = "sites", external = (
      address = {text(options.assets_address)},
      http = (injectRequestHeaders = [(name = "X-Svc-Runtime-Token", value = {text(options.token)})]),
    )),
    (name = "internet", network = (allow = {_list(NETWORK_ALLOW)}, deny = {_list(NETWORK_DENY)})),
  ],
  sockets = [(name = "http", address = {text(listen)}, http = (), service = "dispatcher")],
);
"""
