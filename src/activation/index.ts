export { activateVisible } from "./checked.ts";
export {
  activateLazyGroups,
  compileLazyGroups,
  keywordMatches,
  type LazyGroups,
} from "./lazy.ts";
export { activationMigrations } from "./schema.ts";
export {
  type ActivationScope,
  ActivationStore,
} from "./store.ts";
