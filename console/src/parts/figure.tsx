import { count } from "../format.ts";

/** One figure on a card: a count, or a text already formatted; "…" until it is known. */
export function Figure({
  label,
  value,
  text,
}: {
  label: string;
  value?: number | undefined;
  text?: string | undefined;
}) {
  const shown = text ?? (value === undefined ? undefined : count(value));
  return (
    <div class="card">
      <div class="card-label">{label}</div>
      <div class="card-value" data-figure={label}>
        {shown ?? "…"}
      </div>
    </div>
  );
}
