// A small client of the Workspace API in plain Node (18+: global fetch), the "your code" that
// robustness mode tries to break; the same desk tool as ../python/deskclient.py.
//
// It syncs a workspace's contacts (cursor paging), resolves the open tickets that wait on a
// third party, and retries throttled (429), failing (5xx) and dropped calls. Three bugs are
// planted in it, one at a time, by the environment variable DESK_BUG (unset: the fixed client):
//   null-type    `contact.type.toLowerCase()`, but the document says `type` is nullable;
//   empty-page   the paging loop trusts `has_more: true` to promise a next page with items;
//   retry-after  a 429 is retried after the client's own back-off, ignoring `Retry-After`.

export const BUGS = ["null-type", "empty-page", "retry-after"];

export class ApiError extends Error {
  // A call the API refused (a documented 4xx), or that kept failing after the retries.
  constructor(status, message) {
    super(`${status ?? "no answer"}: ${message}`);
    this.status = status;
  }
}

export class DeskClient {
  constructor(baseUrl, token, { sleep, fetch: fetchImpl, attempts = 4, bug } = {}) {
    this.bug = bug ?? process.env.DESK_BUG ?? "";
    if (this.bug && !BUGS.includes(this.bug)) {
      throw new Error(`DESK_BUG=${this.bug}: one of ${BUGS.join(", ")}`);
    }
    this.baseUrl = baseUrl.replace(/\/$/, "");
    this.token = token;
    this.sleep = sleep ?? ((seconds) => new Promise((ok) => setTimeout(ok, seconds * 1000)));
    this.fetch = fetchImpl ?? globalThis.fetch;
    this.attempts = attempts;
  }

  wait(response, attempt) {
    const backoff = 0.25 * 2 ** attempt;
    if (!response || this.bug === "retry-after") return backoff; // (planted bug: Retry-After ignored)
    const retryAfter = response.headers.get("retry-after") ?? "";
    return /^\d+$/.test(retryAfter) ? Math.max(Number(retryAfter), backoff) : backoff;
  }

  // The answer's JSON body; 429, 5xx and lost connections are retried, other refusals throw
  // ApiError at once.
  async call(method, path, params = {}) {
    const url = new URL(this.baseUrl + path);
    for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
    for (let attempt = 0; attempt < this.attempts; attempt++) {
      const last = attempt + 1 === this.attempts;
      let response;
      let text;
      try { // the answer and its whole body: a connection may drop in either
        response = await this.fetch(url, {
          method,
          headers: { Authorization: `Bearer ${this.token}` },
          signal: AbortSignal.timeout(10_000),
        });
        text = await response.text();
      } catch (error) { // a dropped connection, a time-out
        if (last) throw new ApiError(null, `${method} ${path}: ${error}`);
        await this.sleep(this.wait(null, attempt));
        continue;
      }
      if (response.status === 429 || response.status >= 500) {
        if (last) throw new ApiError(response.status, `${method} ${path}: gave up retrying`);
        await this.sleep(this.wait(response, attempt));
        continue;
      }
      const body = JSON.parse(text);
      if (response.status >= 400) throw new ApiError(response.status, body.error ?? "");
      return body;
    }
    throw new Error("unreachable");
  }

  // Each page's items, following `next_cursor` while `has_more`.
  async *pages(path, params) {
    params = { ...params, limit: 10 };
    for (;;) {
      const page = await this.call("GET", path, params);
      yield page.data;
      if (!page.has_more) return;
      params.cursor = page.next_cursor;
    }
  }

  // The workspace's contacts by id: display name and type.
  async syncContacts(workspaceId) {
    const book = new Map();
    for await (const items of this.pages("/v1/contacts", { workspace_id: workspaceId })) {
      for (const contact of items) {
        const type = this.bug === "null-type"
          ? contact.type.toLowerCase() // (planted bug: null)
          : (contact.type ?? "unknown").toLowerCase();
        const name = `${contact.first_name} ${contact.last_name}`.trim() || contact.id;
        book.set(contact.id, { name, type });
      }
      if (this.bug === "empty-page" || items.length) { // (planted bug: an empty page has no last)
        console.log(`synced ${book.size} contacts, back to ${items.at(-1).last_message_at}`);
      }
    }
    return book;
  }

  // Resolve the open tickets waiting on a third party; their ids.
  async resolveThirdParty(workspaceId) {
    const resolved = [];
    const workload = {};
    const query = { workspace_id: workspaceId, status: "open" };
    for await (const items of this.pages("/v1/tickets", query)) {
      for (const ticket of items) {
        const who = ticket.assignee?.name || "(unassigned)";
        workload[who] = (workload[who] ?? 0) + 1;
        if (ticket.waiting_on === "third_party") {
          await this.call("POST", `/v1/tickets/${encodeURIComponent(ticket.id)}/resolve`);
          resolved.push(ticket.id);
        }
      }
    }
    console.log("open tickets by assignee:", JSON.stringify(workload));
    return resolved;
  }
}
