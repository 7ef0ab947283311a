// svc's own worker inside each workerd process: it runs the projects' workers, each in an isolate of
// its own, loaded on demand through workerd's Worker Loader (docs/workers.md, "One process, many
// isolates"). Nothing here is a project's code; a project's code never sees this module's env.
//
// A request from the edge names the worker to run in X-Svc-Worker (an opaque key: the live
// deployment and the generation of the project's bindings). The first request for a key fetches
// the code and the bindings from svc (GET /v1/runtime/workers/{key}, proved by the runtime token
// that workerd adds to every request to svc); later ones reuse the warm isolate. A new deployment,
// a rollback or a changed secret is a new key: the next request loads the new isolate while the
// requests in flight finish on the old one, which workerd unloads when idle. No restart, no reload.
import { WorkerEntrypoint } from "cloudflare:workers";
import { refusal, WORKER_FAILED } from "./refusal.js";

const KEY = /^[A-Za-z0-9_.:-]{1,200}$/;
const HOP = ["x-svc-worker", "x-svc-runtime-token"];

// env.ASSETS of a project's worker: its deployment's assets/ and nothing else, as the edge serves
// them (content types, ETag, ranges). The props (svc's) name the directory, "<digest>/assets"; the
// edge is told the digest in X-Svc-Assets and is sent the path as /assets/<file>, which it looks up
// under that digest alone (nginx.conf.j2). The path is decoded and confined here first, so nothing
// the edge decodes after can step out: see assetPath. workerd reads no file itself.
export class Assets extends WorkerEntrypoint {
  async fetch(request) {
    if (request.method !== "GET" && request.method !== "HEAD") {
      return new Response("method not allowed", { status: 405, headers: { allow: "GET, HEAD" } });
    }
    const root = ASSETS_ROOT.exec(this.ctx.props.root || "");
    const path = assetPath(new URL(request.url).pathname);
    if (!root || path === null) return new Response("not found", { status: 404 });
    const headers = new Headers({ "x-svc-assets": root[1] });
    for (const name of ["range", "if-none-match", "if-modified-since", "if-range"]) {
      const value = request.headers.get(name);
      if (value) headers.set(name, value);
    }
    return this.env.SITES.fetch(`http://${ASSETS_HOST}/assets${path}`, { method: request.method, headers });
  }
}

const ASSETS_ROOT = /^([0-9a-f]{64})\/assets$/;

// A URL path as a file's path under assets/, or null for one that could name anything else. The
// URL parser resolves `..` it can see, but not `..%2F`, `%2e%2e%2f` or `..%5C`, which the edge would
// decode and then resolve (issue 42): so each segment is decoded once here and refused if it is
// `.` or `..`, or holds a slash, a backslash or NUL (or is not UTF-8), then encoded again, so that
// the edge decodes exactly what was checked. A path ending in / is its index.html, as before.
function assetPath(pathname) {
  const segments = [];
  for (const raw of pathname.split("/").slice(1)) {
    let segment;
    try {
      segment = decodeURIComponent(raw);
    } catch {
      return null;
    }
    if (segment === "." || segment === ".." || /[/\\\0]/.test(segment)) return null;
    segments.push(encodeURIComponent(segment));
  }
  const path = "/" + segments.join("/");
  return path.endsWith("/") ? path + "index.html" : path;
}

const ASSETS_HOST = "_svc-runtime-assets";

// A project's console lines and uncaught exceptions, from the wrapper around its main module
// (below): they go to svc, which keeps them as the project's logs. A binding of the project's
// isolate that the wrapper takes out of env before the project's code sees it.
export class Logs extends WorkerEntrypoint {
  async record(lines) {
    await this.env.SVC.fetch(`http://svc/v1/runtime/projects/${this.ctx.props.project}/logs`, {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ lines }),
    });
  }
}

// env.db of a project's worker (the wrapper presents it as `env.db`, wrapper.js): its SQL goes to
// svc, which runs it on the project's database as the project's role (svc holds the connections;
// no credential is in the worker). The props name the project, as svc set them. A refusal comes
// back as { error: { code, message } }, PostgreSQL's SQLSTATE and words, for the wrapper to throw.
export class Database extends WorkerEntrypoint {
  query(sql, params, tx) { return this.call({ op: "query", sql, params: params ?? [], tx: tx ?? null }); }
  begin() { return this.call({ op: "begin" }); }
  commit(tx) { return this.call({ op: "commit", tx }); }
  rollback(tx) { return this.call({ op: "rollback", tx }); }

  async call(body) {
    const answer = await this.env.SVC.fetch(`http://svc/v1/runtime/projects/${this.ctx.props.project}/db`, {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
    });
    const result = await answer.json().catch(() => null);
    if (answer.ok && result) return result;
    // svc's Error envelope: { code, message, details }; a refusal of PostgreSQL's has its SQLSTATE.
    const sqlstate = result && result.details && result.details.sqlstate;
    if (answer.status === 422 && sqlstate) return { error: { code: sqlstate, message: result.message } };
    return { error: { code: "svc_unavailable", message: result && result.message ? result.message
      : `svc answered ${answer.status}` } };
  }
}

// env.ai of a project's worker (the wrapper presents it as `env.ai`, wrapper.js): OpenAI's chat
// completions through svc's gateway, which checks the grant and the caps, holds the worst case
// against the org's credit, calls the model's provider with svc's key (never in the worker) and
// charges the exact cost (docs/ai.md). fetch() takes OpenAI's request as an OpenAI client sends it
// (streamed answers pass through as they come); env.ai.chat() is on chat() below.
export class AI extends WorkerEntrypoint {
  async fetch(request) {
    const path = new URL(request.url).pathname;
    if (!/^(\/v1)?\/chat\/completions$/.test(path)) {
      return Response.json({ code: "not_found", message: `env.ai serves POST /v1/chat/completions, not ${path}`,
                             details: null }, { status: 404 });
    }
    if (request.method !== "POST") {
      return Response.json({ code: "bad_request", message: "env.ai's chat completions take POST", details: null },
                           { status: 405, headers: { allow: "POST" } });
    }
    return this.env.SVC.fetch(this.url(), { method: "POST", headers: { "content-type": "application/json" },
                                            body: request.body });
  }

  // env.ai.chat(): the whole answer as an RPC result (no body streamed across the isolates, each
  // way: a millisecond less per call than through fetch(), bench/ai.py).
  async chat(body) {
    const answer = await this.env.SVC.fetch(this.url(), { method: "POST", headers: { "content-type": "application/json" },
                                                          body: JSON.stringify(body) });
    return { status: answer.status, result: await answer.json().catch(() => null) };
  }

  url() {
    return `http://svc/v1/runtime/projects/${this.ctx.props.project}/ai/chat/completions`;
  }
}

// env.email of a project's worker (the wrapper presents it as `env.email`, wrapper.js): mail sent
// from the project's address through svc (docs/email.md), which checks the grant and the plan's
// hourly cap, signs it (DKIM) and queues it for the relay. The props name the project, as svc set
// them. send() takes { to, subject, text, html, from, replyTo }; forward() is a received message's
// (the wrapper's message.forward()): its raw bytes, which svc holds, sent on to another address;
// reply() sends the worker's reply to a received message's sender.
// Each answers { status, result }: the log entry, or svc's Error envelope, for the wrapper to throw.
export class Email extends WorkerEntrypoint {
  send(message) { return this.call("send", message); }
  forward(mailId, to, headers) { return this.call("forward", { mailId, to, headers }); }

  // message.reply(): the worker's whole reply (bytes), to the received message's sender.
  async reply(mailId, raw) {
    const url = `http://svc/v1/runtime/projects/${this.ctx.props.project}/email/reply?mailId=${encodeURIComponent(mailId)}`;
    const answer = await this.env.SVC.fetch(url, { method: "POST", headers: { "content-type": "message/rfc822" },
                                                   body: raw });
    return { status: answer.status, result: await answer.json().catch(() => null) };
  }

  async call(op, body) {
    const answer = await this.env.SVC.fetch(`http://svc/v1/runtime/projects/${this.ctx.props.project}/email/${op}`, {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body ?? null),
    });
    return { status: answer.status, result: await answer.json().catch(() => null) };
  }
}

// env.storage of a project's worker (the wrapper presents it as `env.storage`, wrapper.js): the
// project's objects in svc's object store, under the project's prefix, which svc makes from the
// props (docs/storage.md): a key never names another project's objects, whatever it holds. Bodies
// stream both ways, never whole in memory here: fetch() carries put's body to svc and get's body
// back (a PUT or GET of ?key=, with get's range in R2's terms), the rest are RPC calls answering
// { status, result } (the result, or svc's Error envelope, for the wrapper to throw).
export class Storage extends WorkerEntrypoint {
  async fetch(request) {
    const asked = new URL(request.url).searchParams;
    if (!asked.has("key")) return storageRefusal(400, "bad_request", "env.storage: no key");
    const query = new URLSearchParams();
    for (const name of ["key", "offset", "length", "suffix"]) {
      if (asked.has(name)) query.set(name, asked.get(name));
    }
    const url = `${this.url("object")}?${query}`;
    if (request.method === "GET") return this.env.SVC.fetch(url);
    if (request.method !== "PUT") return storageRefusal(405, "bad_request", "env.storage: GET or PUT");
    // svc reserves the declared length against the quota before the first byte: a body of
    // unknown length (a stream that is not a request's body or a FixedLengthStream's) is refused
    // here, as R2 refuses it, rather than sent chunked for svc to refuse.
    if (request.headers.get("content-length") === null) {
      return storageRefusal(411, "length_required", "env.storage.put() of a ReadableStream needs its length: " +
                            "a request's body, or the readable side of a FixedLengthStream");
    }
    // The wrapper's put() names the type given (fetch() would add one to a string body).
    const type = request.headers.get("x-svc-content-type");
    return this.env.SVC.fetch(url, { method: "PUT", headers: type ? { "content-type": type } : {},
                                     body: request.body });
  }

  head(key) { return this.call("head", { key }); }
  list(options) { return this.call("list", options ?? {}); }
  delete(keys) { return this.call("delete", { keys }); }

  async call(op, body) {
    const answer = await this.env.SVC.fetch(this.url(op), {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
    });
    return { status: answer.status, result: await answer.json().catch(() => null) };
  }

  url(op) {
    return `http://svc/v1/runtime/projects/${this.ctx.props.project}/storage/${op}`;
  }
}

function storageRefusal(status, code, message) {
  return Response.json({ code, message, details: null }, { status });
}

// The entrypoints svc may bind into a project's env (svc names them; a project cannot).
const ENTRYPOINTS = new Set(["Database", "AI", "Email", "Storage"]);

const LOGS = "__SVC_LOGS__";
const WRAPPER = "__svc_main__.js";
const REFUSAL = "__svc_refusal__.js";

// The project's main module wrapped by svc's (wrapper.js, whose source and refusal.js's come as
// text bindings of this worker: one copy of each, shared with the workers svc names in a
// configuration of their own, config.py).
function wrapper(env, worker) {
  const prints = Object.values(worker.modules).some((m) => typeof m === "string" && m.includes("console"));
  return env.WRAPPER_SOURCE.replaceAll('"__SVC_MAIN__"', JSON.stringify("./" + worker.mainModule))
    .replaceAll("__SVC_TRACK__", String(prints));
}

async function load(env, ctx, key) {
  const answer = await env.SVC.fetch(`http://svc/v1/runtime/workers/${key}`);
  if (answer.status !== 200) throw new Error(`${UNAVAILABLE}svc answered ${answer.status} for worker ${key}`);
  const worker = await answer.json();
  const bindings = { ...worker.env, [LOGS]: ctx.exports.Logs({ props: { project: worker.project } }) };
  if (worker.assets) bindings.ASSETS = ctx.exports.Assets({ props: { root: worker.assets } });
  for (const [name, binding] of Object.entries(worker.entrypoints || {})) {
    if (ENTRYPOINTS.has(binding.entrypoint)) bindings[name] = ctx.exports[binding.entrypoint]({ props: binding.props });
  }
  return {
    compatibilityDate: worker.compatibilityDate,
    // The wrapper's AsyncLocalStorage (node:async_hooks alone, not the rest of Node's APIs).
    compatibilityFlags: ["nodejs_als"],
    mainModule: WRAPPER,
    modules: { ...worker.modules, [WRAPPER]: wrapper(env, worker), [REFUSAL]: env.REFUSAL_SOURCE },
    env: bindings,
    globalOutbound: env.INTERNET,
  };
}

// Marks a load that failed on svc's side, not in the project's code (the error crosses from the
// loader as a plain Error: its class does not survive, its message does).
const UNAVAILABLE = "svc-runtime-unavailable: ";
// workerd's own log (SVC_DATA_DIR/workers/<process>/workerd.log): svc's side of a failure.
const log = (message) => console.error(`svc dispatcher: ${message}`);
const retries = new Map();
const MAX_RETRIES_KEPT = 10000;

function retry(key) {
  retries.set(key, (retries.get(key) || 0) + 1);
  if (retries.size > MAX_RETRIES_KEPT) retries.delete(retries.keys().next().value);
}

export default {
  async fetch(request, env, ctx) {
    if (request.headers.get("x-svc-runtime-token") !== env.TOKEN) {
      return refusal(request, 403, "forbidden", "only svc's edge may call the runtime", null);
    }
    const url = new URL(request.url);
    if (url.pathname === "/__svc/runtime/health") return new Response("ok");
    if (url.pathname === "/__svc/runtime/check" && request.method === "POST") return check(env, await request.json());
    const key = request.headers.get("x-svc-worker") || "";
    const requestId = request.headers.get("x-request-id");
    if (!KEY.test(key)) return refusal(request, 400, "bad_request", "X-Svc-Worker is missing or malformed", requestId);
    const headers = new Headers(request.headers);
    for (const name of HOP) headers.delete(name);
    // The loader keeps a failed load under its id: after a failure on svc's side the key is
    // loaded under a new id, so a passing outage of svc does not stick to a worker.
    const id = `${key}#${retries.get(key) || 0}`;
    const worker = env.LOADER.get(id, () => load(env, ctx, key));
    try {
      return await worker.getEntrypoint().fetch(new Request(request, { headers }));
    } catch (error) {
      const said = `${error.message}`;
      if (said.includes(UNAVAILABLE)) {
        retry(key);
        log(`worker ${key}: ${said.slice(said.indexOf(UNAVAILABLE) + UNAVAILABLE.length)}`);
        return refusal(request, 503, "worker_unavailable", "The site's worker is not available; try again",
                       requestId);
      }
      // Top-level code that threw as the worker loaded (the wrapper answers for its fetch()).
      return refusal(request, 500, "worker_error", WORKER_FAILED, requestId);
    }
  },
};

// svc's own calls into a loading process, on its control socket (config.py: an address of its own
// that the edge never proxies to, and a token of its own that nginx never holds): a received
// message handed to a worker's email() handler. A visitor's request reaches only the default
// export's fetch() above, and a worker's default entrypoint, never this one, nor the wrapper's
// email entrypoint it calls (EMAIL_ENTRY: a named export, which no socket serves).
export class Control extends WorkerEntrypoint {
  async fetch(request) {
    const env = this.env;
    if (!env.CONTROL_TOKEN || request.headers.get("x-svc-control-token") !== env.CONTROL_TOKEN) {
      return refusal(request, 403, "forbidden", "only svc may call the runtime's control socket", null);
    }
    if (new URL(request.url).pathname !== "/email" || request.method !== "POST") {
      return refusal(request, 404, "not_found", "no such control path", null);
    }
    const key = request.headers.get("x-svc-worker") || "";
    if (!KEY.test(key)) return refusal(request, 400, "bad_request", "X-Svc-Worker is missing or malformed", null);
    const headers = new Headers({ "content-type": "message/rfc822" });
    for (const name of ["x-svc-mail-id", "x-svc-mail-from", "x-svc-mail-to"]) {
      headers.set(name, request.headers.get(name) || "");
    }
    // The wrapper's logs name the message by its id, as they name a request by its own.
    headers.set("x-request-id", request.headers.get("x-svc-mail-id") || "");
    const id = `${key}#${retries.get(key) || 0}`;
    const worker = env.LOADER.get(id, () => load(env, this.ctx, key));
    try {
      return await worker.getEntrypoint(EMAIL_ENTRY).fetch(new Request("http://email/", {
        method: "POST", headers, body: request.body }));
    } catch (error) {
      const said = `${error.message}`;
      if (said.includes(UNAVAILABLE)) {
        retry(key);
        log(`worker ${key}: ${said.slice(said.indexOf(UNAVAILABLE) + UNAVAILABLE.length)}`);
        return refusal(request, 503, "worker_unavailable", "The worker is not available; try again", null);
      }
      // Top-level code that threw as the worker loaded, or an email() the runtime found hung.
      return refusal(request, 500, "worker_error", `the worker failed: ${said}`, null);
    }
  }
}

// The wrapper's named export that runs a worker's email() (wrapper.js).
const EMAIL_ENTRY = "__svc_email__";

// Whether a bundle's worker can run, before its deployment goes live: the module graph is loaded
// (parse, imports, top-level code, the compatibility date) under a wrapper module that reports
// whether the default export handles fetch, so the project's own fetch() is never called. It has
// no bindings and no network. svc runs checks on a workerd process that serves no traffic.
async function check(env, code) {
  // Its named exports are re-exported: workerd refuses a main module's export that is no handler.
  const path = JSON.stringify("./" + code.mainModule);
  const wrapper = `export * from ${path};
import * as main from ${path};
const d = main.default;
const handles = d && ((typeof d === "object" && typeof d.fetch === "function") ||
  (typeof d === "function" && d.prototype && typeof d.prototype.fetch === "function"));
export default { fetch() {
  return Response.json(handles ? { ok: true } : { ok: false, error: d ?
    "the default export has no fetch() handler" : "the main module has no default export" });
} };`;
  const modules = { ...code.modules, [CHECK_MODULE]: wrapper };
  try {
    const worker = env.LOADER.load({ compatibilityDate: code.compatibilityDate, mainModule: CHECK_MODULE, modules,
                                     env: {}, globalOutbound: null });
    return await worker.getEntrypoint().fetch("http://check/");
  } catch (error) {
    return Response.json({ ok: false, error: `${error.message}` });
  }
}

const CHECK_MODULE = "__svc_check__.js";
