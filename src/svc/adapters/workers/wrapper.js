// The main module svc runs for a project: the project's own (imported as "__SVC_MAIN__", which svc
// replaces with its path), wrapped. Its console methods record lines with the request's id, an
// exception its fetch() throws is recorded with its stack and answered by svc's refusal (500
// worker_error), and what a request recorded is sent in one batch when it has ended
// (ctx.waitUntil, an RPC to svc's Logs entrypoint): no cost for a request that prints nothing. (A
// tail worker would cost every request a second invocation: it halved a hello worker's
// throughput.) The Logs binding is taken out of env before the project's code sees it.
//
// Which request a line belongs to: each request runs in an AsyncLocalStorage (the `nodejs_als`
// flag) that tells, also between concurrent requests and in ctx.waitUntil work, when the
// project's modules name `console` (svc writes in whether they do) or once the
// isolate has printed anything; before that, the one request in flight, if one. A worker that
// never prints never pays for it (about 4% of a hello worker's time). docs/workers.md, "Logs".
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
let tracking = __SVC_TRACK__;
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

// The env the project's code sees, svc's bindings presented as plain JavaScript.
function present(env) {
  if (env !== given) {
    own = { ...env };
    delete own[LOGS];
    if (own[DB]) {
      own.db = database(own[DB]);
      delete own[DB];
    }
    if (own[AI]) {
      own.ai = ai(own[AI]);
      delete own[AI];
    }
    if (own[EMAIL]) {
      own.email = email(own[EMAIL]);
      delete own[EMAIL];
    }
    if (own[STORAGE]) {
      own.storage = storage(own[STORAGE]);
      delete own[STORAGE];
    }
    given = env;
  }
  return own;
}

// Not an async function: a handler that answers at once (a Response, not a promise) costs no
// promise and no turn of the microtask queue here (7% of a hello worker's time, measured).
export default {
  fetch(request, env, ctx) {
    present(env);
    const invocation = new Invocation(request, ctx, env[LOGS]);
    inflight.add(invocation);
    const serve = () => typeof handler === "function"
      ? new handler(ctx, own).fetch(request) : handler.fetch(request, own, ctx);
    let answer;
    try {
      answer = tracking ? invocations.run(invocation, serve) : serve();
    } catch (error) {
      return ended(invocation, failed(invocation, error));
    }
    if (answer && typeof answer.then === "function") {
      return answer.then((response) => ended(invocation, response),
                         (error) => ended(invocation, failed(invocation, error)));
    }
    return ended(invocation, answer);
  },
};

// env.db: the project's database, through svc's Database entrypoint (dispatcher.js), as plain
// JavaScript: `await env.db.query("select * from notes where id = $1", [id])` gives
// { rows: [{...}], rowCount, fields, command }; `await env.db.transaction(async (tx) => { ... })`
// runs tx.query() calls in one transaction, committed when the function returns and rolled back
// when it throws. A statement PostgreSQL refuses throws a DatabaseError with its SQLSTATE in
// `code` (23505 for a unique violation) and PostgreSQL's message.
const DB = "__SVC_DB__";

class DatabaseError extends Error {
  constructor(code, message) {
    super(message);
    this.name = "DatabaseError";
    this.code = code;
  }
}

function answered(result) {
  if (result.error) throw new DatabaseError(result.error.code, result.error.message);
  return result;
}

function rowsOf(result) {
  const fields = result.fields;
  const rows = result.rows.map((values) => {
    const row = {};
    for (let i = 0; i < fields.length; i++) row[fields[i]] = values[i];
    return row;
  });
  return { rows, rowCount: result.rowCount, fields, command: result.command };
}

function database(binding) {
  const query = async (sql, params, tx) => rowsOf(answered(await binding.query(sql, params ?? [], tx)));
  return Object.freeze({
    query: (sql, params) => query(sql, params),
    async transaction(work) {
      const { tx } = answered(await binding.begin());
      const handle = Object.freeze({ query: (sql, params) => query(sql, params, tx) });
      let result;
      try {
        result = await work(handle);
      } catch (error) {
        await binding.rollback(tx).catch(() => {});
        throw error;
      }
      answered(await binding.commit(tx));
      return result;
    },
    DatabaseError,
  });
}

// env.ai: OpenAI's chat completions through svc's gateway (the AI entrypoint, dispatcher.js), paid
// from the org's AI credit (docs/ai.md). `await env.ai.chat({ model, messages })` gives OpenAI's
// answer, or throws an AIError with svc's code (insufficient_credit, ai_cap_exceeded, ...) and the
// HTTP status; `env.ai.fetch(request)` takes the request an OpenAI client sends (its URL's path
// /v1/chat/completions, any host) and answers as OpenAI does, streamed when it asks, so
// `new OpenAI({ baseURL: "https://ai/v1", apiKey: "unused", fetch: env.ai.fetch })` works as is.
const AI = "__SVC_AI__";

// A refusal of one of svc's bindings, with svc's code, the HTTP status and svc's message: one class
// per binding, so a worker tells them apart with `instanceof env.ai.AIError` (env.email.EmailError).
function svcError(name) {
  return class extends Error {
    constructor(status, code, message, details) {
      super(message);
      this.name = name;
      this.status = status;
      this.code = code;
      this.details = details;
    }
  };
}

// What svc answered a binding's call, as that binding's error (an answer without svc's body too).
function refusedBy(ErrorType, status, result) {
  return new ErrorType(status, (result && result.code) || "svc_unavailable",
                       (result && result.message) || `svc answered ${status}`, (result && result.details) || null);
}

const AIError = svcError("AIError");

function ai(binding) {
  return Object.freeze({
    async chat(body) {
      if (body && body.stream) throw new TypeError("env.ai.chat() answers whole; stream with env.ai.fetch()");
      const { status, result } = await binding.chat(body);
      if (status === 200 && result) return result;
      throw refusedBy(AIError, status, result);
    },
    fetch(input, init) {
      const request = typeof input === "string" && input.startsWith("/") ? new Request(`https://ai${input}`, init)
        : new Request(input, init);
      return binding.fetch(request);
    },
    AIError,
  });
}

// env.email: mail from the project's address through svc (the Email entrypoint, dispatcher.js;
// docs/email.md). `await env.email.send({ to, subject, text, html, from, replyTo })` (to: an
// address or a list; from: a local part at the project's address, "noreply" when left out) gives
// the log entry { id, outcome } ("queued", or "suppressed" for a recipient that bounced or
// complained), or throws an EmailError with svc's code (email_not_granted, rate_limited,
// bad_request, ...) and the HTTP status.
const EMAIL = "__SVC_EMAIL__";

const EmailError = svcError("EmailError");

function mailed({ status, result }) {
  if (status >= 200 && status < 300 && result) return { id: result.id, outcome: result.outcome };
  throw refusedBy(EmailError, status, result);
}

function email(binding) {
  return Object.freeze({
    async send(message) {
      const m = message || {};
      return mailed(await binding.send({ to: typeof m.to === "string" ? [m.to] : m.to, subject: m.subject,
                                         text: m.text, html: m.html, from: m.from, replyTo: m.replyTo }));
    },
    EmailError,
  });
}

// env.storage: the project's objects (the Storage entrypoint, dispatcher.js; docs/storage.md), with
// R2's Workers API: `get(key, { range })` gives an object with its `body` (a ReadableStream) and
// text()/json()/arrayBuffer()/blob(), or null; `put(key, value, { httpMetadata })` (a string, an
// ArrayBuffer or a view, a Blob, or a ReadableStream of known length: a request's body or a
// FixedLengthStream's readable side; null for an empty object) gives the stored object;
// `head(key)` gives it without its body, or null; `delete(key | keys)`; `list({ prefix, cursor,
// limit, delimiter })` gives { objects, truncated, cursor, delimitedPrefixes }. A refusal throws a
// StorageError with svc's code (storage_quota_exceeded, not_granted, bad_request, ...) and the
// HTTP status. Of httpMetadata only contentType is kept; R2's onlyIf, custom metadata, checksums
// and multipart uploads are not there (yet).
const STORAGE = "__SVC_STORAGE__";

const StorageError = svcError("StorageError");
// The object's Content-Type as the Storage entrypoint takes it from put() (dispatcher.js).
const STORAGE_TYPE = "x-svc-content-type";

// R2Object: what svc says of an object ({ key, size, etag, uploadedAt, contentType }).
class StoredObject {
  constructor(info, range) {
    this.key = info.key;
    this.version = info.etag;
    this.size = info.size;
    // R2's etag is bare; httpEtag is quoted, for an ETag header (svc's is the quoted one).
    this.httpEtag = info.etag;
    this.etag = String(info.etag).replace(/^"|"$/g, "");
    this.checksums = {};
    this.uploaded = new Date(info.uploadedAt);
    this.httpMetadata = info.contentType ? { contentType: info.contentType } : {};
    this.customMetadata = {};
    this.storageClass = "Standard";
    if (range) this.range = range;
  }

  writeHttpMetadata(headers) {
    if (this.httpMetadata.contentType) headers.set("content-type", this.httpMetadata.contentType);
  }
}

// R2ObjectBody: the object and its bytes, streamed from svc as they are read.
class StoredObjectBody extends StoredObject {
  #response;

  constructor(info, range, response) {
    super(info, range);
    this.#response = response;
  }

  get body() { return this.#response.body; }
  get bodyUsed() { return this.#response.bodyUsed; }
  arrayBuffer() { return this.#response.arrayBuffer(); }
  bytes() { return this.#response.arrayBuffer().then((b) => new Uint8Array(b)); }
  text() { return this.#response.text(); }
  json() { return this.#response.json(); }
  blob() { return this.#response.blob(); }
}

function storageKey(key) {
  if (typeof key !== "string") throw new TypeError("env.storage: a key is a string");
  return `http://storage/object?key=${encodeURIComponent(key)}`;
}

// R2's range ({ offset, length }, { offset }, { suffix }, or a Headers with a Range of bytes) as
// the query the Storage entrypoint passes on to svc.
function rangeQuery(range) {
  if (range === undefined || range === null) return "";
  if (range instanceof Headers) {
    const asked = /^bytes=(\d*)-(\d*)$/.exec((range.get("range") || "").trim());
    if (!asked || (asked[1] === "" && asked[2] === "")) throw new TypeError("env.storage.get(): Range is bytes=a-b");
    if (asked[1] === "") return `&suffix=${asked[2]}`;
    return `&offset=${asked[1]}` + (asked[2] === "" ? "" : `&length=${Number(asked[2]) - Number(asked[1]) + 1}`);
  }
  const whole = (n) => Number.isSafeInteger(n) && n >= 0;
  if (range.suffix !== undefined) {
    if (!whole(range.suffix) || range.suffix === 0) throw new TypeError("env.storage.get(): range.suffix is above 0");
    return `&suffix=${range.suffix}`;
  }
  const offset = range.offset ?? 0;
  if (!whole(offset) || (range.length !== undefined && !(whole(range.length) && range.length > 0))) {
    throw new TypeError("env.storage.get(): range is { offset, length }, whole numbers, length above 0");
  }
  return `&offset=${offset}` + (range.length === undefined ? "" : `&length=${range.length}`);
}

// The range svc served ({ offset, length }, from its Content-Range), or the whole object.
function servedRange(response, size) {
  const served = /^bytes (\d+)-(\d+)\//.exec(response.headers.get("content-range") || "");
  if (!served) return { offset: 0, length: size };
  return { offset: Number(served[1]), length: Number(served[2]) - Number(served[1]) + 1 };
}

function contentTypeOf(options) {
  const meta = options && options.httpMetadata;
  if (!meta) return null;
  return meta instanceof Headers ? meta.get("content-type") : meta.contentType || null;
}

function stored({ status, result }) {
  if (status >= 200 && status < 300 && result) return result;
  throw refusedBy(StorageError, status, result);
}

function storage(binding) {
  return Object.freeze({
    async get(key, options) {
      const range = rangeQuery(options && options.range);
      const answer = await binding.fetch(storageKey(key) + range);
      if (answer.ok) {
        const info = JSON.parse(answer.headers.get("x-svc-object"));
        return new StoredObjectBody(info, range ? servedRange(answer, info.size) : undefined, answer);
      }
      const result = await answer.json().catch(() => null);
      if (answer.status === 404 && result && result.code !== "not_granted") return null;
      throw refusedBy(StorageError, answer.status, result);
    },
    async put(key, value, options) {
      // The type given, or none: not the one fetch() would give a string body (text/plain).
      const type = contentTypeOf(options);
      const answer = await binding.fetch(storageKey(key), { method: "PUT", headers: { [STORAGE_TYPE]: type || "" },
                                                            body: value ?? "" });
      return new StoredObject(stored({ status: answer.status, result: await answer.json().catch(() => null) }));
    },
    async head(key) {
      storageKey(key);
      const { object } = stored(await binding.head(key));
      return object ? new StoredObject(object) : null;
    },
    async delete(keys) {
      const all = Array.isArray(keys) ? keys : [keys];
      for (const key of all) storageKey(key);
      if (all.length) stored(await binding.delete(all));
    },
    async list(options) {
      const o = options || {};
      const listed = stored(await binding.list({ prefix: o.prefix ?? "", cursor: o.cursor ?? null,
                                                 limit: o.limit ?? 1000, delimiter: o.delimiter ?? null }));
      return { objects: listed.objects.map((info) => new StoredObject(info)), truncated: listed.nextCursor !== null,
               cursor: listed.nextCursor ?? undefined, delimitedPrefixes: listed.prefixes };
    },
    StorageError,
  });
}

// A received message, as Cloudflare's Email Workers hand it to email(message, env, ctx): the
// envelope's `from` and `to`, the message's `headers` (a Headers), its bytes as `raw` (a
// ReadableStream, a fresh one each read) and `rawSize`; `setReject(reason)` marks it rejected
// in the mail log (svc accepted it already: its sender is not told); `forward(rcptTo, headers?)`
// sends it on as it is, with X-* headers added, through env.email's sending (the plan's hourly
// cap counts it) and gives the log entry of the sent copy; `reply(message)` sends the worker's
// reply (a whole message: `{ raw }`, as Cloudflare's EmailMessage has it, or the raw itself; its
// In-Reply-To naming this message's Message-ID) to this message's sender, from the address it was
// received at.
class ReceivedMessage {
  #bytes;
  #binding;
  #id;

  constructor(headers, bytes, binding) {
    this.from = headers.get("x-svc-mail-from") || "";
    this.to = headers.get("x-svc-mail-to") || "";
    this.#id = headers.get("x-svc-mail-id") || "";
    this.#bytes = bytes;
    this.#binding = binding;
    this.headers = headersOf(bytes);
    this.rawSize = bytes.byteLength;
    this.rejected = null;
  }

  get raw() {
    return new Response(this.#bytes).body;
  }

  setReject(reason) {
    this.rejected = String(reason ?? "");
  }

  async forward(rcptTo, headers) {
    if (!this.#binding) throw new EmailError(403, "email_not_granted", "The project is not granted email", null);
    const extra = headers ? [...new Headers(headers)] : [];
    return mailed(await this.#binding.forward(this.#id, rcptTo, extra));
  }

  async reply(reply) {
    if (!this.#binding) throw new EmailError(403, "email_not_granted", "The project is not granted email", null);
    const raw = reply && typeof reply === "object" && "raw" in reply ? reply.raw : reply;
    const bytes = typeof raw === "string" ? new TextEncoder().encode(raw)
      : new Uint8Array(await new Response(raw).arrayBuffer());
    return mailed(await this.#binding.reply(this.#id, bytes));
  }
}

// The header section of a raw message (up to the first empty line), unfolded, as a Headers.
function headersOf(bytes) {
  const text = new TextDecoder("utf-8").decode(bytes.subarray(0, Math.min(bytes.byteLength, 256 * 1024)));
  const end = text.search(/\r?\n\r?\n/);
  const lines = (end < 0 ? text : text.slice(0, end)).replace(/\r?\n[ \t]+/g, " ").split(/\r?\n/);
  const headers = new Headers();
  for (const line of lines) {
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    try {
      headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
    } catch {
      // A name or value Headers refuses (a malformed line of the sender's): left out.
    }
  }
  return headers;
}

// svc's call of the project's email() (dispatcher.js's Control entrypoint names this export; no
// socket serves it, so no visitor reaches it): { outcome: "handled" | "rejected" | "no_handler" },
// or 500 worker_error when email() throws (in the project's logs, under the message's id).
export const __svc_email__ = {
  async fetch(request, env, ctx) {
    const own = present(env);
    const handles = typeof handler === "function" ? !!(handler.prototype && typeof handler.prototype.email === "function")
      : !!(handler && typeof handler.email === "function");
    if (!handles) return Response.json({ outcome: "no_handler" });
    const message = new ReceivedMessage(request.headers, new Uint8Array(await request.arrayBuffer()), env[EMAIL]);
    const invocation = new Invocation(request, ctx, env[LOGS]);
    inflight.add(invocation);
    const run = () => typeof handler === "function" ? new handler(ctx, own).email(message)
      : handler.email(message, own, ctx);
    try {
      await (tracking ? invocations.run(invocation, run) : run());
    } catch (error) {
      (invocation.lines ??= []).push({ at: Date.now(), level: "error", message: String(error),
                                      stack: (error && error.stack) || null, requestId: invocation.id() });
      ended(invocation, null);
      return Response.json({ code: "worker_error", message: `email() threw ${String(error)}` }, { status: 500 });
    }
    ended(invocation, null);
    return Response.json(message.rejected !== null ? { outcome: "rejected", reason: message.rejected }
      : { outcome: "handled" });
  },
};

// An exception of the project's fetch(): in its logs with its stack; svc's refusal answers.
function failed(invocation, error) {
  (invocation.lines ??= []).push({ at: Date.now(), level: "error", message: String(error),
                                  stack: (error && error.stack) || null, requestId: invocation.id() });
  return refusal(invocation.request, 500, "worker_error", WORKER_FAILED, invocation.id());
}

// The request has its answer: what it printed goes in one batch; later lines go one by one.
function ended(invocation, response) {
  inflight.delete(invocation);
  invocation.sent = true;
  if (invocation.lines) invocation.ctx.waitUntil(invocation.logs.record(invocation.lines));
  return response;
}
