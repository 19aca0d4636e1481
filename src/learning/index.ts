// Learning from use: each tenant's choices and outcome reports teach its own ranking.
export { Learning } from "./learning.ts";
export type { Choice, Outcome } from "./lessons.ts";
export type { LearnedRequest } from "./model.ts";
export { unknownSearch } from "./searches.ts";
export { PostgresSearches } from "./shared-searches.ts";
export { LearningStore, learningMigrations } from "./store.ts";
