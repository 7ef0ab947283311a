// Notes kept in the project's own PostgreSQL database through env.db (svc db create; no npm
// install, no connection string, no password in the code). The table is made on first use.
//
//   GET  /api/notes              the notes, newest first
//   POST /api/notes              {"body": "..."} -> the new note (201)
//   POST /api/notes/batch        {"bodies": ["...", ...]}: all or none, in one transaction
//   GET  /api/notes/count        how many there are
// A statement PostgreSQL refuses throws a DatabaseError whose `code` is its SQLSTATE.
const SCHEMA = `create table if not exists notes (
  id bigserial primary key,
  body text not null check (length(body) between 1 and 1000),
  created_at timestamptz not null default now()
)`;

// Once per isolate (a promise is not shared between requests: each runs the idempotent DDL itself
// until one has finished it).
let ready = false;

function json(value, status = 200) {
  return Response.json(value, { status });
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (!env.db) return json({ error: "this project has no database yet: run `svc db create`" }, 503);
    if (!ready) {
      await env.db.query(SCHEMA);
      ready = true;
    }
    try {
      if (url.pathname === "/api/notes" && request.method === "GET") {
        const { rows } = await env.db.query("select id, body, created_at from notes order by id desc limit $1",
                                            [url.searchParams.get("limit") ?? 50]);
        return json({ notes: rows });
      }
      if (url.pathname === "/api/notes" && request.method === "POST") {
        const { body } = await request.json();
        const { rows } = await env.db.query("insert into notes (body) values ($1) returning id, body, created_at",
                                            [body]);
        return json(rows[0], 201);
      }
      if (url.pathname === "/api/notes/batch" && request.method === "POST") {
        const { bodies } = await request.json();
        const ids = await env.db.transaction(async (tx) => {
          const made = [];
          for (const body of bodies) {
            const { rows } = await tx.query("insert into notes (body) values ($1) returning id", [body]);
            made.push(rows[0].id);
          }
          return made;
        });
        return json({ ids }, 201);
      }
      if (url.pathname === "/api/notes/count") {
        const { rows } = await env.db.query("select count(*)::int as n from notes");
        return json({ count: rows[0].n });
      }
    } catch (error) {
      if (error.name === "DatabaseError") return json({ error: error.message, code: error.code }, 400);
      throw error;
    }
    return json({ error: `nothing at ${url.pathname}` }, 404);
  },
};
