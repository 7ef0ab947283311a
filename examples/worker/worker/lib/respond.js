export function json(body, status = 200) {
  return Response.json(body, { status, headers: { "cache-control": "no-store" } });
}

export function notFound(message) {
  return json({ code: "not_found", message }, 404);
}
