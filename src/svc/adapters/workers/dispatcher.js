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

const KEY = /^[A-Za-z0-9_.:-]{1,200}$/;
const HOP = ["x-svc-worker", "x-svc-runtime-token"];

// env.ASSETS of a project's worker: its deployment's assets/ and nothing else, as the edge serves
// them (content types, ETag, ranges): the props name the directory, and the URL parser has already
// resolved any `..`, so a path cannot leave it. workerd reads no file itself.
export class Assets extends WorkerEntrypoint {
  async fetch(request) {
    if (request.method !== "GET" && request.method !== "HEAD") {
      return new Response("method not allowed", { status: 405, headers: { allow: "GET, HEAD" } });
    }
    const url = new URL(request.url);
    let path = url.pathname;
    if (path.endsWith("/")) path += "index.html";
    const headers = new Headers();
    for (const name of ["range", "if-none-match", "if-modified-since", "if-range"]) {
      const value = request.headers.get(name);
      if (value) headers.set(name, value);
    }
    return this.env.SITES.fetch(`http://${ASSETS_HOST}/${this.ctx.props.root}${path}`,
                                { method: request.method, headers });
  }
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

const LOGS = "__SVC_LOGS__";
const WRAPPER = "__svc_main__.js";

// The main module svc runs for a project: the project's own, wrapped. Its console methods record
// lines (with the request's id, through an AsyncLocalStorage), an exception its fetch() throws is
// recorded with its stack, and what a request recorded is sent in one batch when it has ended
// (ctx.waitUntil), lines or nothing: no cost for a request that prints nothing. (A tail worker
// would cost every request a second invocation: it halved a hello worker's throughput.)
function wrapper(mainModule) {
  const path = JSON.stringify("./" + mainModule);
  return `import * as main from ${path};
export * from ${path};
import { AsyncLocalStorage } from "node:async_hooks";
const invocations = new AsyncLocalStorage();
const outside = [];
const text = (value) => typeof value === "string" ? value : value instanceof Error ? String(value) : JSON.stringify(value);
const record = (line) => {
  const invocation = invocations.getStore();
  if (!invocation) { outside.push(line); return; }
  line.requestId = invocation.id;
  if (invocation.sent) invocation.ctx.waitUntil(invocation.logs.record([line]));
  else invocation.lines.push(line);
};
for (const level of ["debug", "info", "log", "warn", "error"]) {
  console[level] = (...args) => record({ at: Date.now(), level, message: args.map(text).join(" ") });
}
const handler = main.default;
export default {
  async fetch(request, env, ctx) {
    const logs = env[${JSON.stringify(LOGS)}];
    const own = { ...env };
    delete own[${JSON.stringify(LOGS)}];
    const invocation = { id: request.headers.get("x-request-id"), lines: outside.splice(0), sent: false, ctx, logs };
    try {
      return await invocations.run(invocation, () => typeof handler === "function"
        ? new handler(ctx, own).fetch(request) : handler.fetch(request, own, ctx));
    } catch (error) {
      invocation.lines.push({ at: Date.now(), level: "error", message: String(error),
                              stack: (error && error.stack) || null, requestId: invocation.id });
      throw error;
    } finally {
      invocation.sent = true;
      if (invocation.lines.length) ctx.waitUntil(logs.record(invocation.lines.splice(0)));
    }
  },
};
`;
}

async function load(env, ctx, key) {
  const answer = await env.SVC.fetch(`http://svc/v1/runtime/workers/${key}`);
  if (answer.status !== 200) throw new Error(`${UNAVAILABLE}svc answered ${answer.status} for worker ${key}`);
  const worker = await answer.json();
  const bindings = { ...worker.env, [LOGS]: ctx.exports.Logs({ props: { project: worker.project } }) };
  if (worker.assets) bindings.ASSETS = ctx.exports.Assets({ props: { root: worker.assets } });
  return {
    compatibilityDate: worker.compatibilityDate,
    // The wrapper's AsyncLocalStorage (node:async_hooks alone, not the rest of Node's APIs).
    compatibilityFlags: ["nodejs_als"],
    mainModule: WRAPPER,
    modules: { ...worker.modules, [WRAPPER]: wrapper(worker.mainModule) },
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

// svc's answer when a worker cannot answer: the Error envelope (the API's, spec section 7) for API
// clients; for browsers a page. Neither shows the exception: it is in the project's logs, found by
// the request id.
function refusal(request, status, code, message, requestId) {
  const headers = { "cache-control": "no-store" };
  if (/text\/html/i.test(request.headers.get("accept") || "")) {
    return new Response(page(status, message, requestId), {
      status, headers: { ...headers, "content-type": "text/html; charset=utf-8" },
    });
  }
  return Response.json({ code, message, details: requestId ? { requestId } : null }, { status, headers });
}

function page(status, message, requestId) {
  const escape = (text) => String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  const id = requestId ? `<p>Request id: <code>${escape(requestId)}</code></p>` : "";
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" ` +
    `content="width=device-width, initial-scale=1"><title>${status}</title></head><body ` +
    `style="font-family: system-ui, sans-serif; max-width: 36rem; margin: 4rem auto; padding: 0 1rem">` +
    `<h1>${status === 500 ? "This site could not answer" : "This site is not available"}</h1>` +
    `<p>${escape(message)}</p>${id}</body></html>`;
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
      // The exception and its stack reach the project's logs by the tail; only the id is shown here.
      return refusal(request, 500, "worker_error", "The site's worker failed on this request", requestId);
    }
  },
};

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
