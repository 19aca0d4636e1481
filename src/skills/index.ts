/** Public surface of the Skills domain (docs/design.md §3 SkillLibrary, §4). */
export type { DirectoryField, RenderSkillDirectoryInput } from "./directory.ts";
export { SkillLibrary, type SkillLibraryOptions } from "./library.ts";
export type { LoadProgress, LoadSkillPackInput } from "./load.ts";
export type { ScopeKind, SkillOrigin, TaskType, ToolGate } from "./model.ts";
export { TASK_TYPES } from "./model.ts";
export type { PackFile } from "./pack.ts";
export type { GetSkillsInput, ListSkillsInput } from "./read.ts";
export { redactText } from "./redact.ts";
export type { GetRelevantSkillsInput } from "./relevant.ts";
export { listedTrigger, type SkillSummary } from "./sanitize.ts";
export { skillsMigrations } from "./schema.ts";
export type { SearchSkillsInput } from "./search.ts";
export type { SkillWordIndex } from "./word-index.ts";
