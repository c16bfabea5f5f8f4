// A virtualised list of fixed-height rows: only the rows in view (plus a margin) are in the
// DOM, so 10,000 events cost what 40 do. Rows are one line each (long text is cut by CSS and
// opened in the detail pane), which is what keeps the height fixed and scrolling cheap.
//
// Scrolling must stay cheap per frame: the scroll handler reads only `scrollTop` (the list's
// full and visible heights are known without asking the layout engine, which would have to
// lay the page out again first), the window is kept as a row index, so a scroll inside the
// same row renders nothing, and each row is a memoised component: a scroll renders the rows
// that came into view, not every row on screen; the elements of rows that left are reused
// for them, in place.
//
// Reused in place, rows are not in the page in their visual order. So the keyboard does not
// walk them in page order: the list itself is the one tab stop (rows' own controls take
// tabIndex -1), and the arrow keys, Page Up/Down, Home and End move the focus from row to
// row in visual order, scrolling as they go. Each row says where it stands
// (aria-posinset/aria-setsize), for screen readers.
import { memo, useEffect, useRef, useState, type KeyboardEvent, type ReactNode } from "react";

type RowProps<T> = {
  item: T;
  index: number;
  count: number;
  top: number;
  height: number;
  render: (item: T, index: number) => ReactNode;
};

function RowView<T>({ item, index, count, top, height, render }: RowProps<T>) {
  return (
    <div
      role="listitem"
      className="vrow"
      data-index={index}
      aria-posinset={index + 1}
      aria-setsize={count}
      style={{ top, height }}
    >
      {render(item, index)}
    </div>
  );
}
const Row = memo(RowView) as typeof RowView;

export function VirtualList<T>(props: {
  items: readonly T[];
  rowHeight: number;
  height: number;
  /**
   * Keep it stable (useCallback): a new function renders every row again. Controls in a row
   * take tabIndex={-1}: the arrow keys reach them (see above).
   */
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

  // The keyboard: move the focus to the row `delta` rows away from the focused one (from
  // the first in view when the list itself has the focus), scrolling it into view first.
  const focusWanted = useRef<number | null>(null);
  const onKeyDown = (e: KeyboardEvent<HTMLDivElement>) => {
    const el = ref.current;
    if (!el || items.length === 0) return;
    const page = Math.max(1, Math.floor(height / rowHeight) - 1);
    const deltas: Record<string, number> = {
      ArrowDown: 1,
      ArrowUp: -1,
      PageDown: page,
      PageUp: -page,
      Home: -items.length,
      End: items.length,
    };
    const delta = deltas[e.key];
    if (delta === undefined) return;
    e.preventDefault();
    const at = (document.activeElement as HTMLElement | null)?.closest<HTMLElement>("[data-index]");
    const from = at && el.contains(at) ? Number(at.dataset.index) : firstRow - (delta > 0 ? 1 : 0);
    const to = Math.min(items.length - 1, Math.max(0, from + delta));
    const view = el.scrollTop;
    if (to * rowHeight < view) el.scrollTop = to * rowHeight;
    else if ((to + 1) * rowHeight > view + height - 2)
      el.scrollTop = (to + 1) * rowHeight - height + 2;
    focusWanted.current = to;
    setFirstRow(Math.floor(el.scrollTop / rowHeight));
    focusRow();
  };
  const focusRow = () => {
    const to = focusWanted.current;
    const row = to === null ? null : ref.current?.querySelector(`[data-index="${to}"]`);
    if (!row) return;
    focusWanted.current = null;
    const target = row.querySelector<HTMLElement>("button, a, [tabindex]") ?? (row as HTMLElement);
    target.focus({ preventScroll: true });
  };
  // A row that was not in the page yet is focused once it is drawn.
  useEffect(focusRow);

  const margin = 10;
  const first = Math.max(0, firstRow - margin);
  const span = Math.ceil(height / rowHeight) + 1 + 2 * margin;
  const last = Math.min(items.length, first + span);
  // Keyed and ordered by slot, not by item: the element of a row that scrolled out is reused,
  // in place, for the one scrolling in (its text changes; nothing is created, removed or
  // moved while scrolling).
  const rows: ReactNode[] = [];
  for (let slot = 0; slot < span; slot++) {
    const i = first + ((slot - (first % span) + span) % span);
    if (i >= last) continue;
    rows.push(
      <Row
        key={slot}
        item={items[i]!}
        index={i}
        count={items.length}
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
      onKeyDown={onKeyDown}
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
