// A virtualised list of fixed-height rows: only the rows in view (plus a margin) are in the
// DOM, so 10,000 events cost what 40 do. Rows are one line each (long text is cut by CSS and
// opened in the detail pane), which is what keeps the height fixed and scrolling cheap.
import { useEffect, useRef, useState, type ReactNode } from "react";

export function VirtualList<T>(props: {
  items: readonly T[];
  rowHeight: number;
  height: number;
  render: (item: T, index: number) => ReactNode;
  /** Keep the view pinned to the bottom while new rows arrive (a live conversation). */
  follow?: boolean;
  label: string;
  /** Called when the view reaches the top (to page in older rows). */
  onReachTop?: () => void;
  /** A row's identity, so rows paged in above keep the view on what it showed. */
  keyOf: (item: T) => string | number;
}) {
  const { items, rowHeight, height, render, follow, label, onReachTop, keyOf } = props;
  const ref = useRef<HTMLDivElement>(null);
  const [top, setTop] = useState(0);
  const pinned = useRef(true);

  // Rows added above (older pages) keep what is on screen where it was; rows added below
  // follow the bottom while the view is pinned there.
  const firstKey = useRef<string | number | undefined>(undefined);
  const count = useRef(0);
  useEffect(() => {
    const el = ref.current;
    const prevFirst = firstKey.current;
    const added = items.length - count.current;
    firstKey.current = items[0] === undefined ? undefined : keyOf(items[0]);
    count.current = items.length;
    if (!el) return;
    if (prevFirst !== undefined && firstKey.current !== prevFirst && added > 0 && !pinned.current) {
      const at = items.findIndex((it) => keyOf(it) === prevFirst);
      if (at > 0) {
        el.scrollTop += at * rowHeight;
        setTop(el.scrollTop);
        return;
      }
    }
    if (follow && pinned.current) {
      el.scrollTop = el.scrollHeight;
      setTop(el.scrollTop);
    }
  }, [items, follow, rowHeight, keyOf]);

  const margin = 10;
  const first = Math.max(0, Math.floor(top / rowHeight) - margin);
  const last = Math.min(items.length, Math.ceil((top + height) / rowHeight) + margin);
  const rows: ReactNode[] = [];
  for (let i = first; i < last; i++) {
    rows.push(
      <div
        key={keyOf(items[i]!)}
        role="listitem"
        className="vrow"
        style={{ top: i * rowHeight, height: rowHeight }}
      >
        {render(items[i]!, i)}
      </div>,
    );
  }
  return (
    <div
      ref={ref}
      className="vlist"
      role="list"
      aria-label={label}
      tabIndex={0}
      style={{ height }}
      onScroll={(e) => {
        const el = e.currentTarget;
        pinned.current = el.scrollTop + el.clientHeight >= el.scrollHeight - rowHeight;
        setTop(el.scrollTop);
        if (el.scrollTop < rowHeight * 5) onReachTop?.();
      }}
    >
      <div style={{ height: items.length * rowHeight, position: "relative" }}>{rows}</div>
    </div>
  );
}
