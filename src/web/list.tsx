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
}) {
  const { items, rowHeight, height, render, follow, label } = props;
  const ref = useRef<HTMLDivElement>(null);
  const [top, setTop] = useState(0);
  const pinned = useRef(true);

  useEffect(() => {
    const el = ref.current;
    if (!el || !follow || !pinned.current) return;
    el.scrollTop = el.scrollHeight;
    setTop(el.scrollTop);
  }, [items.length, follow]);

  const margin = 10;
  const first = Math.max(0, Math.floor(top / rowHeight) - margin);
  const last = Math.min(items.length, Math.ceil((top + height) / rowHeight) + margin);
  const rows: ReactNode[] = [];
  for (let i = first; i < last; i++) {
    rows.push(
      <div
        key={i}
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
      }}
    >
      <div style={{ height: items.length * rowHeight, position: "relative" }}>{rows}</div>
    </div>
  );
}
