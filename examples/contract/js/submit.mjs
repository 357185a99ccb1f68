// Submit one task to Drover and follow it to its terminal event, using
// nothing but the wire contract (docs/contract.md) and nats.js.
//
//   npm install --no-audit --no-fund
//   NATS_URL=nats://127.0.0.1:4222 node submit.mjs [workflow] [task] [scope]
//
// DROVER_PREFIX names the deployment (default "drover"), DROVER_QUEUE the
// queue (default "default"), DROVER_WAIT_S how long to wait for the outcome
// (default 120). It prints one line per event of the task, then the outcome,
// and exits 0 when the task completed, 1 when it ended otherwise, 2 on a
// timeout or an error.
import { connect, headers } from "@nats-io/transport-node";
import { DeliverPolicy, jetstream } from "@nats-io/jetstream";

// token escapes an ID for a subject, a KV key or a header (contract: "IDs
// and tokens"): every byte of its UTF-8 outside [A-Za-z0-9_-] becomes "="
// and two upper-case hex digits.
export function token(id) {
  let out = "";
  for (const b of new TextEncoder().encode(id)) {
    const plain = (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) ||
      (b >= 0x61 && b <= 0x7a) || b === 0x5f || b === 0x2d;
    out += plain ? String.fromCharCode(b) : "=" + b.toString(16).toUpperCase().padStart(2, "0");
  }
  return out;
}

// validID applies the contract's ID rule before publishing, so a bad ID
// fails here rather than as a task_rejected this script would not follow (a
// rejected request whose ID is unreadable is recorded under "_").
export function validID(id) {
  const bytes = new TextEncoder().encode(id).length;
  return id.isWellFormed() && bytes >= 1 && bytes <= 128 && id !== "_" &&
    !/[\u0000-\u0020\u007f-\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/u.test(id);
}

const ENDED = new Set(["task_completed", "task_failed", "task_cancelled"]);

async function main() {
  const [workflow = `js-${Date.now()}`, id = "T1", scope = "Write a greeting"] = process.argv.slice(2);
  for (const v of [workflow, id]) {
    if (!validID(v)) {
      throw new Error(`${JSON.stringify(v)} is not a valid ID: 1 to 128 bytes, no white space or control characters, not "_"`);
    }
  }
  const prefix = process.env.DROVER_PREFIX || "drover";
  const queue = process.env.DROVER_QUEUE || "default";
  const waitMs = 1000 * Number(process.env.DROVER_WAIT_S || 120);

  const nc = await connect({ servers: (process.env.NATS_URL || "nats://127.0.0.1:4222").split(",") });
  const js = jetstream(nc);

  // Submit: JetStream publish with the request's Nats-Msg-Id, so a retried
  // submission inside the duplicate window is stored once.
  const request = { id, workflow, scope, verification: "The greeting says hello", type: "example", max_attempts: 3 };
  const h = headers();
  h.set("Drover-Contract", "1");
  const ack = await js.publish(`${prefix}.tasks.${queue}`, JSON.stringify(request), {
    msgID: `${token(workflow)}/${token(id)}`,
    headers: h,
  });
  console.log(`submitted ${workflow}/${id}: ${ack.stream} seq ${ack.seq}${ack.duplicate ? " (duplicate)" : ""}`);

  // Follow every event of the task from the start of the audit stream. The
  // task's outcome is its task_completed, task_failed or task_cancelled; a
  // rejection of this request is the task_rejected whose event ID ends in
  // "/<stream seq of the request>".
  const consumer = await js.consumers.get(`${prefix.toUpperCase()}_AUDIT`, {
    filter_subjects: [`${prefix}.audit.${token(workflow)}.${token(id)}.>`],
    deliver_policy: DeliverPolicy.All,
  });
  const messages = await consumer.consume();
  const timer = setTimeout(() => messages.stop(new Error(`no terminal event within ${waitMs / 1000}s`)), waitMs);
  let outcome;
  try {
    for await (const m of messages) {
      const ev = m.json();
      console.log(`event ${ev.event_type} actor=${ev.actor} attempt=${ev.attempt} status=${ev.status}` +
        (ev.action ? ` action=${ev.action}` : ""));
      const mine = ev.event_type === "task_rejected" && ev.event_id.endsWith(`/${ack.seq}`);
      if (ENDED.has(ev.event_type) || mine) {
        outcome = ev;
        break;
      }
    }
  } finally {
    clearTimeout(timer);
    messages.stop();
  }
  await nc.close();
  if (!outcome) {
    throw new Error("the audit stream ended without a terminal event");
  }
  const state = { task_completed: "completed", task_failed: "failed", task_cancelled: "cancelled", task_rejected: "rejected" }[outcome.event_type];
  console.log(`outcome: ${state} (${outcome.event_type}, event ${outcome.event_id})`);
  if (outcome.error) {
    console.log(`error: ${outcome.error}`);
  }
  console.log(`output: ${JSON.stringify(outcome.output)}`);
  return state === "completed" ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`error: ${err.message}`);
    process.exit(2);
  },
);
