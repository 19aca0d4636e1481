/** Public surface of the Skills domain (DESIGN.md §3 SkillService, §4). */
export type {
  ScopeKind,
  SearchType,
  Skill,
  SkillContent,
  SkillOrigin,
  SkillScope,
  SkillStats,
  TaskType,
  TextAuthor,
  ToolGate,
} from "./model.ts";
export { SCOPE_KINDS, SEARCH_TYPES, SKILL_ORIGINS, TASK_TYPES } from "./model.ts";
export type { PackFile, PackLimits, PackProblem } from "./pack.ts";
export { DEFAULT_PACK_LIMITS } from "./pack.ts";
export { redactText } from "./redact.ts";
export type { ContextFormat } from "./render.ts";
export { skillsMigrations } from "./schema.ts";
export {
  type BudgetReport,
  type CallOptions,
  DIRECTORY_FIELDS,
  type DirectoryField,
  type GetRelevantSkillsInput,
  type GetRelevantSkillsResult,
  type GetSkillsInput,
  type GetSkillsResult,
  LIMITS as SKILL_LIMITS,
  type ListedSkill,
  type ListSkillsInput,
  type ListSkillsResult,
  type LoadProgress,
  type LoadSkillPackInput,
  type LoadSkillPackResult,
  type RenderSkillDirectoryInput,
  type RenderSkillDirectoryResult,
  type SearchSkillsInput,
  type SearchSkillsResult,
  type SkillDetails,
  type SkillSearchHit,
  SkillService,
  type SkillServiceOptions,
  type SkillSummary,
} from "./service.ts";
export { visibleSkillPredicate } from "./store.ts";
