export { activateVisible, type CheckedActivationResult, type ResolveTool } from "./checked.ts";
export {
  activateLazyGroups,
  compileLazyGroups,
  keywordMatches,
  type LazyActivationResult,
  type LazyGroupMatch,
  type LazyGroups,
} from "./lazy.ts";
export { activationMigrations } from "./schema.ts";
export {
  type ActivateOptions,
  type ActivationDenyReason,
  type ActivationResult,
  type ActivationScope,
  type ActivationSource,
  ActivationStore,
  type ActivationStoreOptions,
  type DeactivationResult,
} from "./store.ts";
