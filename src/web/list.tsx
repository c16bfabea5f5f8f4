// A virtualised list of fixed-height rows: only the rows in view (plus a margin) are in the
// DOM, so 10,000 events cost what 40 do. Rows are one line each (long text is cut by CSS and
// opened in the detail pane), which is what keeps the height fixed and scrolling cheap.
//
// Scrolling must stay cheap per frame: the scroll handler reads only `scrollTop` (the list's
// full and visible heights are known without asking the layout engine, which would have to
// lay the page out again first), the window is kept as a row index, so a scroll inside the
// same row renders nothing, and each row is a memoised component: a scroll renders the rows
// that came into view, not every row on screen.
import { memo, useEffect, useRef, useState, type ReactNode } from "react";

type RowProps<T> = {
  item: T;
  index: number;
  top: number;
  height: number;
  render: (item: T, index: number) => ReactNode;
};

function RowView<T>({ item, index, top, height, render }: RowProps<T>) {
  return (
    <div role="listitem" className="vrow" style={{ top, height }}>
      {render(item, index)}
    </div>
  );
}
const Row = memo(RowView) as typeof RowView;

export function VirtualList<T>(props: {
  items: readonly T[];
  rowHeight: number;
  height: number;
  /** Keep it stable (useCallback): a new function renders every row again. */
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
  /** The first row in view (not the pixel offset: scrolling within a row renders nothing). */
  const [firstRow, setFirstRow] = useState(0);
  const pinned = useRef(true);
  const total = items.length * rowHeight;
  const sizes = useRef({ total, height, rowHeight });
  sizes.current = { total, height, rowHeight };

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
        setFirstRow(Math.floor(el.scrollTop / rowHeight));
        return;
      }
    }
    if (follow && pinned.current) {
      el.scrollTop = items.length * rowHeight;
      setFirstRow(Math.floor(el.scrollTop / rowHeight));
    }
  }, [items, follow, rowHeight, keyOf]);

  const margin = 10;
  const first = Math.max(0, firstRow - margin);
  const last = Math.min(items.length, firstRow + Math.ceil(height / rowHeight) + 1 + margin);
  const rows: ReactNode[] = [];
  for (let i = first; i < last; i++) {
    rows.push(
      <Row
        key={keyOf(items[i]!)}
        item={items[i]!}
        index={i}
        top={i * rowHeight}
        height={rowHeight}
        render={render}
      />,
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
        const top = e.currentTarget.scrollTop;
        const s = sizes.current;
        // The list's box is `height` tall with a 1px border above and below.
        pinned.current = top + s.height - 2 >= s.total - s.rowHeight;
        setFirstRow(Math.floor(top / s.rowHeight));
        if (top < s.rowHeight * 5) onReachTop?.();
      }}
    >
      <div style={{ height: total, position: "relative" }}>{rows}</div>
    </div>
  );
}
