// The desk client's own test, the COMMAND `python -m mockserver robust -- node ...` runs.
//
// It runs the client against MOCK_API_BASE_URL with MOCK_API_TOKEN on MOCK_API_WORKSPACE and
// fails (a non-zero exit) when the client crashes (anything but an ApiError, a documented
// refusal it reports), resolves a ticket twice, or sends a request sooner than a 429's
// Retry-After allowed (its waits are recorded, not slept: a long Retry-After costs nothing).
import assert from "node:assert/strict";
import { ApiError, DeskClient } from "./desk.mjs";

const timeline = [];

async function recordingFetch(url, init) {
  timeline.push(["request", `${init.method} ${new URL(url).pathname}`]);
  const response = await fetch(url, init);
  if (response.status === 429) timeline.push(["429", response.headers.get("retry-after")]);
  return response;
}

// After each 429, the waits before the next request add up to its Retry-After.
function checkRetryAfter(events) {
  let owed = 0;
  let waited = 0;
  for (const [event, value] of events) {
    if (event === "request") {
      assert.ok(waited >= owed,
        `a request went out ${waited}s after a 429 whose Retry-After was ${owed}s`);
      owed = 0;
      waited = 0;
    } else if (event === "sleep") {
      waited += value;
    } else if (event === "429") {
      owed = Number(value ?? 0);
      waited = 0;
    }
  }
}

const env = process.env;
const client = new DeskClient(env.MOCK_API_BASE_URL, env.MOCK_API_TOKEN, {
  fetch: recordingFetch,
  sleep: async (seconds) => { timeline.push(["sleep", seconds]); },
});
try {
  const book = await client.syncContacts(env.MOCK_API_WORKSPACE);
  const resolved = await client.resolveThirdParty(env.MOCK_API_WORKSPACE);
  assert.equal(new Set(resolved).size, resolved.length, `a ticket resolved twice: ${resolved}`);
  console.log(`ok: ${book.size} contacts synced, ${resolved.length} tickets resolved`);
} catch (error) {
  if (!(error instanceof ApiError)) throw error;
  console.log(`ok: the client reported a refusal: ${error.message}`);
}
checkRetryAfter(timeline);
