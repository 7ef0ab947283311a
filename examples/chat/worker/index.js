// A chat page's API on env.ai (docs/ai.md): the worker holds no key; svc's gateway checks the
// project's grant and caps and pays the model's provider from the org's AI credit.
//
//   POST /api/chat    {"message": "..."} -> {"reply": "...", "usage": {...}}     (env.ai.chat)
//   POST /api/stream  {"message": "..."} -> OpenAI's server-sent events, as they come (env.ai.fetch)
const MODEL = "openai/gpt-4o-mini";

function messages(message) {
  return [{ role: "system", content: "You answer in one short paragraph." }, { role: "user", content: message }];
}

async function ask(request) {
  const body = await request.json().catch(() => null);
  const message = body && typeof body.message === "string" ? body.message.trim() : "";
  return message ? message.slice(0, 4000) : null;
}

export default {
  async fetch(request, env) {
    const { pathname } = new URL(request.url);
    if (!pathname.startsWith("/api/")) return env.ASSETS.fetch(request);
    if (!env.ai) {
      return Response.json({ error: "AI is off for this project: svc ai grant" }, { status: 503 });
    }
    if (request.method !== "POST") return Response.json({ error: "POST a message" }, { status: 405 });
    const message = await ask(request);
    if (message === null) return Response.json({ error: "message: some text" }, { status: 400 });

    if (pathname === "/api/chat") {
      try {
        const answer = await env.ai.chat({ model: MODEL, messages: messages(message), max_tokens: 300 });
        return Response.json({ reply: answer.choices[0].message.content, usage: answer.usage });
      } catch (error) {
        if (error instanceof env.ai.AIError) {
          // svc's own code: insufficient_credit, ai_cap_exceeded, ai_upstream_error, ...
          return Response.json({ error: error.message, code: error.code }, { status: error.status });
        }
        throw error;
      }
    }
    if (pathname === "/api/stream") {
      // OpenAI's request as any OpenAI client sends it; the events pass through as they come.
      return env.ai.fetch("/v1/chat/completions", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: MODEL, messages: messages(message), max_tokens: 300, stream: true }),
      });
    }
    return Response.json({ error: `no ${pathname}` }, { status: 404 });
  },
};
