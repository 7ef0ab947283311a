// The main module svc runs for a project: the project's own (imported as "__SVC_MAIN__", which svc
// replaces with its path), wrapped. Its console methods record lines with the request's id, an
// exception its fetch() throws is recorded with its stack and answered by svc's refusal (500
// worker_error), and what a request recorded is sent in one batch when it has ended
// (ctx.waitUntil, an RPC to svc's Logs entrypoint): no cost for a request that prints nothing. (A
// tail worker would cost every request a second invocation: it halved a hello worker's
// throughput.) The Logs binding is taken out of env before the project's code sees it.
//
// Which request a line belongs to: while one request is in flight, that one; once the isolate
// has printed anything, each request runs in an AsyncLocalStorage (the `nodejs_als` flag) that
// tells, also between concurrent requests. A worker that never prints never pays for it (about
// 4% of a hello worker's time). docs/workers.md, "Logs and traffic".
import * as main from "__SVC_MAIN__";
export * from "__SVC_MAIN__";
import { AsyncLocalStorage } from "node:async_hooks";
import { refusal, WORKER_FAILED } from "./__svc_refusal__.js";

const LOGS = "__SVC_LOGS__";
const invocations = new AsyncLocalStorage();
const outside = [];
const text = (value) => typeof value === "string" ? value : value instanceof Error ? String(value) : JSON.stringify(value);
// Requests in flight, and whether their lines have needed telling apart yet.
const inflight = new Set();
let tracking = false;
const record = (line) => {
  const invocation = (tracking && invocations.getStore()) ||
    (inflight.size === 1 ? inflight.values().next().value : undefined);
  tracking = true;
  if (!invocation) { outside.push(line); return; }
  line.requestId = invocation.id();
  if (invocation.sent) invocation.ctx.waitUntil(invocation.logs.record([line]));
  else (invocation.lines ??= []).push(line);
};
for (const level of ["debug", "info", "log", "warn", "error"]) {
  console[level] = (...args) => record({ at: Date.now(), level, message: args.map(text).join(" ") });
}
const handler = main.default;
// The env the project's code sees: its own bindings, without svc's log sink. Made once per env
// workerd hands in (the same object request after request), not per request.
let given = null;
let own = null;

class Invocation {
  constructor(request, ctx, logs) {
    this.request = request;
    this.ctx = ctx;
    this.logs = logs;
    this.lines = outside.length ? outside.splice(0) : null;
    this.sent = false;
  }

  id() {
    return this.request.headers.get("x-request-id");
  }
}

export default {
  async fetch(request, env, ctx) {
    if (env !== given) {
      own = { ...env };
      delete own[LOGS];
      given = env;
    }
    const invocation = new Invocation(request, ctx, env[LOGS]);
    inflight.add(invocation);
    const serve = () => typeof handler === "function"
      ? new handler(ctx, own).fetch(request) : handler.fetch(request, own, ctx);
    try {
      return await (tracking ? invocations.run(invocation, serve) : serve());
    } catch (error) {
      (invocation.lines ??= []).push({ at: Date.now(), level: "error", message: String(error),
                                      stack: (error && error.stack) || null, requestId: invocation.id() });
      return refusal(request, 500, "worker_error", WORKER_FAILED, invocation.id());
    } finally {
      inflight.delete(invocation);
      invocation.sent = true;
      if (invocation.lines) ctx.waitUntil(invocation.logs.record(invocation.lines));
    }
  },
};
