// svc's answer when a worker cannot answer: the Error envelope (the API's, spec section 7) for API
// clients; for browsers a page. Neither shows the exception: it is in the project's logs, found by
// the request id. A module of svc's dispatcher, and of every project's worker (beside the wrapper,
// wrapper.js), so a worker's own failure is answered the same way however the request reached it.
export function refusal(request, status, code, message, requestId) {
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

export const WORKER_FAILED = "The site's worker failed on this request";
