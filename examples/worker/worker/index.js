// A small JSON API: a greeting that reads the GREETING secret (svc secrets set GREETING), quotes
// read from the deployment's own files through env.ASSETS, and an echo. Everything that is not
// under /api/ is a file of assets/ (index.html), served by the edge before the worker is asked.
import { json, notFound } from "./lib/respond.js";

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === "/api/greeting") {
      const name = url.searchParams.get("name") || "world";
      return json({ message: `${env.GREETING ?? "Hello"}, ${name}!`, secretVersion: env.SVC_SECRET_VERSIONS?.GREETING ?? null });
    }
    if (url.pathname === "/api/quotes") {
      const file = await env.ASSETS.fetch(new URL("/quotes.json", request.url));
      const quotes = await file.json();
      const id = Number(url.searchParams.get("id") ?? Math.floor(Math.random() * quotes.length));
      return quotes[id] ? json({ id, ...quotes[id] }) : notFound(`no quote ${id}`);
    }
    if (url.pathname === "/api/echo" && request.method === "POST") {
      return json({ youSent: await request.json(), from: request.headers.get("cf-connecting-ip") });
    }
    return notFound(`nothing at ${url.pathname}`);
  },
};
