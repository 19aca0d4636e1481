export * from "./event.ts";
export {
  type EventGap,
  EventLog,
  type EventLogOptions,
  type EventSubscription,
  type SubscribeOptions,
} from "./log.ts";
export { eventsMigrations } from "./schema.ts";
