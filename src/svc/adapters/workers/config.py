"""workerd's configuration, in Cap'n Proto text. A loading process's (and the checker's) is the same
whatever projects exist: a project's worker is loaded on demand by the dispatcher, not named here.
A steady process's (steady.py) names the live workers of its shard besides, each a service of its
own on a unix socket of its own.

    services  dispatcher  svc's worker (dispatcher.js): the one the TCP socket serves; its
                          entrypoints Assets and Logs are the projects' env.ASSETS and log sink
              svc         svc's API (the worker's code and bindings, the logs), proved by the
                          runtime token workerd adds to each request
              sites       the edge's server of the deployments' files (env.ASSETS), proved by
                          the same token: workerd reads no file of svc's
              internet    what a project's fetch() reaches: public addresses only
              w<slot>     a steady process's project worker: the project's modules under
                          svc's wrapper (wrapper.js), its env, Assets and Logs bound with props
    sockets   http        127.0.0.1:<port>, the address the edge proxies to (and the health probe)
              control     127.0.0.1:<port>, a loading process's second address, which only svc
                          calls (a received message to a worker's email(): the dispatcher's Control
                          entrypoint, proved by a token of its own that nginx never holds)
              w<slot>     unix:<path>, a steady worker's own (renamed to <sockets>/slots/<slot>.sock,
                          where the edge's upstream svc_steady connects)

The schema is workerd's own (src/workerd/server/workerd.capnp in workerd's sources)."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from svc.adapters.workers.port import EntrypointBinding, WorkerCode

DISPATCHER = Path(__file__).with_name("dispatcher.js")
# svc's modules around a project's main module (dispatcher.js and direct workers alike).
WRAPPER = Path(__file__).with_name("wrapper.js")
REFUSAL = Path(__file__).with_name("refusal.js")
WRAPPER_MODULE = "__svc_main__.js"
REFUSAL_MODULE = "__svc_refusal__.js"
LOGS_BINDING = "__SVC_LOGS__"
# The sockets' HTTP: the scheme the client used (the edge's X-Forwarded-Proto) is the scheme of
# the URL the worker sees, as behind Cloudflare (https once the edge serves TLS).
HTTP = '(forwardedProtoHeader = "X-Forwarded-Proto")'
# The wrapper's AsyncLocalStorage (node:async_hooks alone, not the rest of Node's APIs).
PROJECT_FLAGS = ("nodejs_als",)
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
    # A loading process's control socket (the Control entrypoint) and the token it expects
    # (X-Svc-Control-Token): svc's own calls, never proxied by the edge. None: no such socket.
    control_port: int | None = None
    control_token: str = ""


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


def _list(values: Sequence[str]) -> str:
    return "[" + ", ".join(text(v) for v in values) + "]"


@dataclass(frozen=True)
class DirectWorker:
    """A live worker a steady process serves on a socket of its own (steady.py)."""

    slot: int
    socket: Path
    project_id: str
    code: WorkerCode
    env: Mapping[str, object]
    # "<digest hex>/assets" under the sites, or None (no env.ASSETS).
    assets: str | None


@functools.cache
def source(path: Path) -> str:
    """One of svc's own modules (they change only with svc): read once."""
    return path.read_text()


def wrapped_main(code: WorkerCode) -> str:
    """svc's wrapper module (wrapper.js) around a project's main module (as dispatcher.js makes it)."""
    prints = any(isinstance(module, str) and "console" in module for module in code.modules.values())
    return (source(WRAPPER).replace('"__SVC_MAIN__"', json.dumps("./" + code.main_module))
            .replace("__SVC_TRACK__", "true" if prints else "false"))


def _module(name: str, value: object) -> str:
    if isinstance(value, str):
        return f"(name = {text(name)}, esModule = {text(value)})"
    if isinstance(value, Mapping) and "json" in value:
        return f"(name = {text(name)}, json = {text(json.dumps(value['json']))})"
    if isinstance(value, Mapping) and isinstance(value.get("text"), str):
        return f"(name = {text(name)}, text = {text(value['text'])})"
    raise WorkerdConfigError(f"module {name!r} is neither source, json nor text")


def _binding(name: str, value: object) -> str:
    if isinstance(value, EntrypointBinding):
        return _entrypoint(name, value.entrypoint, value.props)
    if isinstance(value, str):
        return f"(name = {text(name)}, text = {text(value)})"
    return f"(name = {text(name)}, json = {text(json.dumps(value))})"


def _entrypoint(name: str, entrypoint: str, props: Mapping[str, str]) -> str:
    return (f"(name = {text(name)}, service = (name = \"dispatcher\", entrypoint = {text(entrypoint)}, "
            f"props = (json = {text(json.dumps(props))})))")


def _direct_service(worker: DirectWorker) -> str:
    code = worker.code
    modules = [_module(WRAPPER_MODULE, wrapped_main(code)),
               _module(REFUSAL_MODULE, source(REFUSAL)),
               *(_module(name, value) for name, value in code.modules.items())]
    bindings = [_binding(name, value) for name, value in worker.env.items()]
    bindings.append(_entrypoint(LOGS_BINDING, "Logs", {"project": worker.project_id}))
    if worker.assets is not None:
        bindings.append(_entrypoint("ASSETS", "Assets", {"root": worker.assets}))
    return f"""    (name = "w{worker.slot}", worker = (
      modules = [{", ".join(modules)}],
      compatibilityDate = {text(code.compatibility_date)},
      compatibilityFlags = {_list(PROJECT_FLAGS)},
      bindings = [{", ".join(bindings)}],
      globalOutbound = "internet",
    )),
"""


def _address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def render(options: RuntimeOptions, direct: Sequence[DirectWorker] = (), dispatcher: str | None = None) -> str:
    """The configuration, whole in one text: every module's source is in it (workerd reads the
    configuration on its standard input, and no other file). `direct`: a steady process's workers."""
    dispatcher = dispatcher if dispatcher is not None else source(DISPATCHER)
    services = "".join(_direct_service(worker) for worker in direct)
    sockets = "".join(f",\n    (name = \"w{w.slot}\", address = {text(f'unix:{w.socket}')}, http = {HTTP}, "
                      f"service = \"w{w.slot}\")" for w in direct)
    listen = _address(options.listen_host, options.listen_port)
    if options.control_port is not None:
        control = text(_address(options.listen_host, options.control_port))
        sockets += (f",\n    (name = \"control\", address = {control}, "
                    f"http = (), service = (name = \"dispatcher\", entrypoint = \"Control\"))")
    return f"""# Written by svc at each start of the worker runtime; edits are lost (docs/workers.md).
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  v8Flags = [{text(f"--max-old-space-size={options.memory_mb}")}],
  services = [
    (name = "dispatcher", worker = (
      modules = [(name = {text(DISPATCHER.name)}, esModule = {text(dispatcher)}),
                 (name = {text(REFUSAL.name)}, esModule = {text(source(REFUSAL))})],
      compatibilityDate = {text(DISPATCHER_DATE)},
      compatibilityFlags = ["enable_ctx_exports"],
      bindings = [
        (name = "LOADER", workerLoader = ()),
        (name = "SVC", service = "svc"),
        (name = "SITES", service = "sites"),
        (name = "INTERNET", service = "internet"),
        (name = "TOKEN", text = {text(options.token)}),
        (name = "CONTROL_TOKEN", text = {text(options.control_token)}),
        (name = "WRAPPER_SOURCE", text = {text(source(WRAPPER))}),
        (name = "REFUSAL_SOURCE", text = {text(source(REFUSAL))}),
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
{services}  ],
  sockets = [(name = "http", address = {text(listen)}, http = {HTTP}, service = "dispatcher"){sockets}],
);
"""
