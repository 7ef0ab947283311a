// A mailbox on env.email and email() (docs/email.md): mail sent to any address at the project's
// mail domain is answered with a short reply, and POST /api/send sends a message from it.
//
//   svc deploy examples/mailbox && svc email grant --project mailbox
//   mail anything@mailbox.<org>.<mail domain>   ->  a reply, both in `svc email log --project mailbox`
//   POST /api/send  {"to": "you@example.com", "subject": "...", "text": "..."}  ->  {"id", "outcome"}

function isAutomatic(message) {
  // Never answer a bounce (empty sender), an auto-reply or a list: that is how mail loops start.
  const auto = (message.headers.get("auto-submitted") || "no").toLowerCase();
  return !message.from || auto !== "no" || message.headers.has("list-id") ||
    (message.headers.get("precedence") || "").match(/bulk|list|junk/i);
}

export default {
  async fetch(request, env) {
    const { pathname } = new URL(request.url);
    if (!env.email) {
      return Response.json({ error: "email is off for this project: svc email grant" }, { status: 503 });
    }
    if (pathname !== "/api/send" || request.method !== "POST") {
      return new Response("POST /api/send {to, subject, text} sends a message; mail sent here is answered.\n");
    }
    const body = await request.json().catch(() => ({}));
    try {
      return Response.json(await env.email.send({ to: body.to, subject: body.subject || "Hello",
                                                  text: body.text || "Sent from svc's mailbox example." }));
    } catch (error) {
      if (error instanceof env.email.EmailError) {
        // svc's own code: rate_limited (the plan's hourly cap), bad_request, email_not_granted
        return Response.json({ error: error.message, code: error.code }, { status: error.status });
      }
      throw error;
    }
  },

  async email(message, env) {
    const subject = message.headers.get("subject") || "";
    console.log(`mail from ${message.from} to ${message.to}: ${subject}`);
    if (isAutomatic(message)) return;
    const to = message.to.split(",")[0];
    const raw = [`From: ${to}`, `To: ${message.from}`, `Subject: Re: ${subject}`.slice(0, 200),
                 `In-Reply-To: ${message.headers.get("message-id")}`, "Auto-Submitted: auto-replied", "",
                 "Thanks: your message reached the mailbox example.", ""].join("\r\n");
    await message.reply({ raw });
  },
};
