import type { DescEnum } from "@bufbuild/protobuf";

/** Formats for figures people read: counts, money, shares, times. */

const COUNT = new Intl.NumberFormat("en", { maximumFractionDigits: 0 });
const USD = new Intl.NumberFormat("en", { style: "currency", currency: "USD", maximumFractionDigits: 4 });

export const count = (value: number | bigint): string => COUNT.format(value);
export const usd = (value: number): string => USD.format(value);
export const percent = (share: number): string => `${(share * 100).toFixed(1)} %`;
export const score = (value: number): string => value.toFixed(3);
export const clock = (date: Date | undefined): string => (date ? date.toISOString().slice(11, 19) : "–");

/** Midnight UTC of the day `days` before today (0 = today), as the usage ledger's days begin. */
export function utcDayStart(daysBack = 0): Date {
  const now = new Date();
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() - daysBack));
}

/** An enum value as people say it: `LOADING_MODE_DEFERRED` → "deferred". */
export function enumLabel(schema: DescEnum, value: number): string {
  return schema.value[value]?.localName.toLowerCase().replaceAll("_", " ") ?? "unknown";
}
