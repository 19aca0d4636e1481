// Learning from use (issue 29): each tenant's choices and outcome reports teach its own ranking.
export { type Choice, Learning, type Outcome, unknownSearch } from "./learning.ts";
export type { LearnedRequest } from "./model.ts";
export { PostgresSearches } from "./shared-searches.ts";
export { LearningStore, learningMigrations } from "./store.ts";
