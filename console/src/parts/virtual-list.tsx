import { elementScroll, observeElementOffset, observeElementRect, Virtualizer } from "@tanstack/virtual-core";
import type { ComponentChildren } from "preact";
import { useEffect, useLayoutEffect, useReducer, useRef, useState } from "preact/hooks";

export interface VirtualListProps<T> {
  readonly items: readonly T[];
  /** Height of one row in CSS pixels (rows are fixed-height: smooth at thousands a second). */
  readonly rowHeight: number;
  readonly label: string;
  readonly keyOf: (item: T) => string;
  readonly render: (item: T) => ComponentChildren;
}

/** A scrolling list that renders only the rows in view (TanStack Virtual), whatever its length. */
export function VirtualList<T>({ items, rowHeight, label, keyOf, render }: VirtualListProps<T>) {
  const scroller = useRef<HTMLElement>(null);
  const [, rerender] = useReducer((n: number) => n + 1, 0);
  const [virtualizer] = useState(
    () =>
      new Virtualizer<HTMLElement, HTMLElement>({
        count: items.length,
        getScrollElement: () => scroller.current,
        estimateSize: () => rowHeight,
        scrollToFn: elementScroll,
        observeElementRect,
        observeElementOffset,
        overscan: 8,
        onChange: () => rerender(undefined),
      }),
  );
  virtualizer.setOptions({ ...virtualizer.options, count: items.length });
  useEffect(() => virtualizer._didMount(), [virtualizer]);
  useLayoutEffect(() => virtualizer._willUpdate());

  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling box must take focus, or keyboard users cannot scroll it
    <section ref={scroller} class="virtual-list" aria-label={label} tabIndex={0}>
      <ul style={{ height: `${virtualizer.getTotalSize()}px` }}>
        {virtualizer.getVirtualItems().map((row) => {
          const item = items[row.index];
          if (item === undefined) return null;
          return (
            <li
              key={keyOf(item)}
              class="virtual-row"
              style={{ height: `${rowHeight}px`, transform: `translateY(${row.start}px)` }}
            >
              {render(item)}
            </li>
          );
        })}
      </ul>
    </section>
  );
}
