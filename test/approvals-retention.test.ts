// The calls an approval ask held are bounded with their ask: pruning an agent's old closed
// asks removes their settled calls, and never a call that was approved but has not run yet.
import { openHomeStore } from "./helpers/raw-store.ts";
import { afterAll, describe, expect, it } from "vitest";
import type { AskRecord } from "../src/domain/ask.ts";
import type { ApprovalCallRecord, ApprovalCallState } from "../src/domain/approval.ts";
import { cleanupHomes, tempHome } from "./helpers/home.ts";

afterAll(cleanupHomes);

const at = (i: number) => new Date(Date.UTC(2026, 0, 1, 0, i)).toISOString();

function ask(id: string, i: number): AskRecord {
  return {
    id,
    agent_id: "main",
    kind: "approval",
    source: "approval",
    scope: "agent",
    about: "run a command",
    detail: "ExecCommand git push",
    options: ["approve", "deny"],
    free_text: false,
    state: "decided",
    decision: "approve",
    expires_at: at(i + 600),
    details: {},
    deliveries: {},
    created_at: at(i),
    updated_at: at(i),
  };
}

function call(askId: string, state: ApprovalCallState, i: number): ApprovalCallRecord {
  return {
    ask_id: askId,
    call_id: `${askId}-c`,
    agent_id: "main",
    index: 1,
    state,
    tool_name: "ExecCommand",
    input: { cmd: "git push" },
    input_digest: "d",
    snapshot: {},
    created_at: at(i),
    updated_at: at(i),
  };
}

describe("approval calls under retention", () => {
  it("go with their pruned ask once settled; an approved call still owed a run stays", async () => {
    const store = openHomeStore(tempHome());
    try {
      const states: ApprovalCallState[] = ["completed", "denied", "approved", "void"];
      states.forEach((s, i) => {
        store.asks.put(ask(`a${i}`, i), false);
        store.approvals.addCall(call(`a${i}`, s, i));
      });
      await store.asks.put(ask("newest", 10), false);
      await store.approvals.addCall(call("newest", "completed", 10));

      expect(await store.asks.pruneClosed("main", 1)).toBe(4);
      expect(await store.asks.get("newest")).toBeDefined();
      expect(await store.approvals.callsOfAsk("newest")).toHaveLength(1);
      for (const id of ["a0", "a1", "a3"]) expect(await store.approvals.callsOfAsk(id)).toEqual([]);
      expect((await store.approvals.callsOfAsk("a2")).map((c) => c.state)).toEqual(["approved"]);
    } finally {
      store.close();
    }
  });
});
