// Polling a control route from a page: the latest answer, the latest error, and a way to ask
// again at once (after the page changed something). The request in flight is aborted when the
// page leaves or the path changes, so a late answer never lands on another page.
import { useEffect, useState } from "react";
import { get } from "./api.ts";

/** GET `path` now and then every `everyMs` (0: once). */
export function usePoll<T>(
  path: string,
  everyMs: number,
): { data: T | null; error: string | null; reload: () => void } {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const ac = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const load = async () => {
      try {
        setData(await get<T>(path, ac.signal));
        setError(null);
      } catch (err) {
        if (!ac.signal.aborted) setError(err instanceof Error ? err.message : String(err));
      }
      if (!ac.signal.aborted && everyMs > 0) timer = setTimeout(load, everyMs);
    };
    void load();
    return () => {
      ac.abort();
      clearTimeout(timer);
    };
  }, [path, everyMs, tick]);
  return { data, error, reload: () => setTick((t) => t + 1) };
}
