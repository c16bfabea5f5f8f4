// A deadline: something that must happen to an agent at a time, kept durably so a restart
// neither loses nor repeats it. Sleep wakes use it now; timers and rechecks will too.
import { z } from "zod";

export const Deadline = z.object({
  id: z.string(),
  agent_id: z.string(),
  /** Who handles it when due (e.g. "sleep_wake"); the scheduler routes by kind. */
  kind: z.string(),
  /** At most one live deadline per key (e.g. one sleep wake per agent). */
  key: z.string().optional(),
  due_at: z.string(),
  payload: z.record(z.string(), z.unknown()),
  created_at: z.string(),
});
export type Deadline = z.infer<typeof Deadline>;
