// The work plane's part in asks (asks/service.ts AskEffects): an ask about a work item
// holds that item and nothing else. Opening one sets the item's `blocked_by` (naming the
// ask, with no recheck reminder: a held item costs nothing while it waits); a decision
// lifts it and applies what was chosen: for a question, the answer goes to the agent; for
// a runaway halt, `continue N` (N more self-continuations), `block item` or `cancel item`.
// An input ask that expires tells the agent; a question's item is runnable again, a
// halted item stays halted until the operator unblocks it. Runs inside the ask's
// transaction, so the item and the ask never disagree.
import type { AskRecord } from "../domain/ask.ts";
import type { AskDecision, AskEffects } from "../asks/service.ts";
import type { Store } from "../store/db.ts";
import type { WorkItemRecord } from "../domain/work-item.ts";
import { recheckKey, type WorkService } from "./service.ts";

/** The marker an ask leaves in `blocked_by`, so only that ask's blocker is lifted. */
export const askMarker = (askId: string) => `(ask ${askId})`;

export class WorkAskEffects implements AskEffects {
  private readonly store: Store;
  private readonly work: WorkService;
  private readonly deadlines: { cancelKey(key: string): Promise<boolean> };

  constructor(deps: {
    store: Store;
    work: WorkService;
    deadlines: { cancelKey(key: string): Promise<boolean> };
  }) {
    this.store = deps.store;
    this.work = deps.work;
    this.deadlines = deps.deadlines;
  }

  private async openItem(ask: AskRecord): Promise<WorkItemRecord | undefined> {
    if (ask.scope !== "work_item" || !ask.work_item_id) return undefined;
    const item = await this.store.workItems.get(ask.work_item_id);
    return item && item.state === "open" ? item : undefined;
  }

  async opened(ask: AskRecord): Promise<void> {
    const item = await this.openItem(ask);
    if (!item) return;
    const what = ask.source === "needs_input" ? "waiting for the operator" : "halted";
    await this.setBlocker(item, `${what} ${askMarker(ask.id)}: ${ask.about}`);
  }

  async decided(ask: AskRecord, d: AskDecision): Promise<string | undefined> {
    const item = await this.openItem(ask);
    if (!item) return undefined;
    await this.release(item, ask);
    const fresh = (await this.store.workItems.get(item.id))!;
    if (ask.source === "needs_input") {
      if (fresh.plan_status === "needs_input") await this.commit(fresh, { plan_status: "draft" });
      return `Work item ${item.id} is runnable again; set its plan_status when the plan is clear.`;
    }
    if (ask.source !== "runaway_guard" && ask.source !== "max_turns") return undefined;
    switch (d.option) {
      case "continue N": {
        const n = d.count ?? 1;
        const state = await this.store.workItems.agentState(ask.agent_id);
        const { halted_at: _h, ...rest } = state;
        await this.store.workItems.putAgentState(ask.agent_id, {
          ...rest,
          continuations_without_progress: 0,
          allowance: n,
        });
        return `Work item ${item.id} may continue: up to ${n} more self-continuations without progress before the runtime halts it again. Make visible progress (todo states, the plan) or block or complete it.`;
      }
      case "block item":
        await this.work.operatorBlock(
          ask.agent_id,
          item.id,
          `blocked by the operator (answer to ask ${ask.id})${ask.reason ? `: ${ask.reason}` : ""}`,
        );
        return `Work item ${item.id} is blocked by the operator; leave it and work on other runnable items.`;
      case "cancel item":
        await this.work.complete(ask.agent_id, item.id, {
          by: "operator",
          note: `Cancelled by the operator (answer to ask ${ask.id})${ask.reason ? `: ${ask.reason}` : ""}`,
        });
        return `Work item ${item.id} was cancelled by the operator; do not continue it.`;
      default:
        return undefined;
    }
  }

  async closed(ask: AskRecord): Promise<void> {
    const item = await this.openItem(ask);
    if (!item) return;
    if (ask.state === "withdrawn") {
      await this.release(item, ask);
      return;
    }
    if (ask.state !== "expired" || ask.kind === "budget") return;
    if (ask.source === "needs_input") {
      await this.release(item, ask);
      const fresh = (await this.store.workItems.get(item.id))!;
      if (fresh.plan_status === "needs_input") await this.commit(fresh, { plan_status: "draft" });
      return;
    }
    // A runaway halt outlives its ask: the item stays blocked until the operator lifts it.
    if (item.blocked_by?.includes(askMarker(ask.id))) {
      await this.setBlocker(
        item,
        `halted ${askMarker(ask.id)}, expired unanswered: ${ask.about}; unblock it with holon work unblock`,
      );
    }
  }

  private async release(item: WorkItemRecord, ask: AskRecord): Promise<void> {
    if (!item.blocked_by?.includes(askMarker(ask.id))) return;
    const next: WorkItemRecord = { ...item };
    delete next.blocked_by;
    delete next.recheck_at;
    delete next.recheck_consumed_at;
    await this.work.commit(next, ["blocked_by"], "runtime");
  }

  /** A blocker with no recheck reminder (unlike UpdateWorkItem's): the ask is the reminder. */
  private async setBlocker(item: WorkItemRecord, text: string): Promise<void> {
    const next: WorkItemRecord = { ...item, blocked_by: text.slice(0, 2_000) };
    delete next.recheck_at;
    delete next.recheck_consumed_at;
    await this.deadlines.cancelKey(recheckKey(item.id));
    await this.work.commit(next, ["blocked_by"], "runtime");
  }

  private async commit(item: WorkItemRecord, patch: Partial<WorkItemRecord>): Promise<void> {
    await this.work.commit({ ...item, ...patch }, Object.keys(patch), "runtime");
  }
}
