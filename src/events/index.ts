export * from "./event.ts";
export { EventLog, type EventLogOptions } from "./log.ts";
export { eventsMigrations } from "./schema.ts";
export type { EventGap, EventSubscription } from "./subscription.ts";
