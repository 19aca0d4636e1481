/**
 * What a caller may do with skills (SkillService): the one place the skill library, meaning, learning
 * and the caller's tool gate meet, as ToolService is for tools. It sits a layer above the library
 * (src/skills, domain), which knows nothing of the model or of learning; the RPC handlers and the
 * MCP endpoint's skill tools only convert to and from it.
 */

import { authorizeSkillPackScope } from "../caller/authorize.ts";
import type { Caller, Principal } from "../caller/caller.ts";
import { failedPrecondition, notFound, quoteInput } from "../errors.ts";
import { type Learning, type Outcome, unknownSearch } from "../learning/index.ts";
import type { SemanticEvidence, SemanticQuery } from "../search/evidence.ts";
import type {
  GetRelevantSkillsInput,
  GetSkillsInput,
  ListSkillsInput,
  LoadSkillPackInput,
  RenderSkillDirectoryInput,
  ScopeKind,
  SearchSkillsInput,
  SkillLibrary,
  SkillWordIndex,
  ToolGate,
} from "../skills/index.ts";

export interface SkillServiceOptions {
  readonly library: SkillLibrary;
  /** The tool names a caller may see, so skills never mention others (built by the tool side). */
  readonly toolGateFor: (caller: Caller) => ToolGate | undefined;
  /** Semantic ranking (config `tool_search.semantic`) for full-text searches and tasks; absent = words only. */
  readonly semantic?: {
    evidence(query: SemanticQuery<SkillWordIndex>): Promise<SemanticEvidence<SkillWordIndex>>;
  };
  /** Remembers retrievals so outcome reports may name them and teach, and ranks by what was learned. */
  readonly learning?: Learning;
}

/** A pack to load, as a caller asks: its scope is a kind, the caller's tenant and project fill it in. */
type SkillPackRequest = Omit<LoadSkillPackInput, "scope" | "onProgress"> & {
  readonly scope: ScopeKind;
};

export class SkillService {
  constructor(private readonly options: SkillServiceOptions) {}

  /** Loads a pack into the caller's tenant or project, or (operators only) for everyone. */
  async loadPack(caller: Caller, principal: Principal, request: SkillPackRequest) {
    const kind = request.scope;
    authorizeSkillPackScope(principal, kind);
    if (kind !== "global" && caller.tenantId === "")
      throw failedPrecondition(`a ${kind}-scoped pack needs caller.tenant_id`);
    if (kind === "project" && caller.projectId === "")
      throw failedPrecondition(
        "a project-scoped pack needs caller.project_id (or use SKILL_SCOPE_TENANT / GLOBAL)",
      );
    const scope = {
      kind,
      tenantId: kind === "global" ? "" : caller.tenantId,
      projectId: kind === "project" ? caller.projectId : "",
    };
    return this.options.library.loadSharedSkillPack({ ...request, scope }, caller);
  }

  /**
   * Searches the caller's skills; a full-text search with its meaning and what the caller's tenant
   * learned, and remembered so an outcome report may name it (searchId).
   */
  async search(caller: Caller, input: SearchSkillsInput) {
    const { library, semantic } = this.options;
    await library.ready();
    const search = library.prepareSearch(caller, input);
    const fts = search.type === "fts";
    const meaning = semantic && fts ? await semantic.evidence(library.searchMeaning(search)) : undefined;
    const learned = fts ? await this.learned(caller, search.query, meaning) : undefined;
    const result = library.searchPrepared(caller, search, {
      ...this.gate(caller),
      semantic: meaning,
      learned,
    });
    const hits = result.skills.map((hit) => hit.name);
    // Only a full-text request is one to learn from (a pattern or a name says nothing of meaning).
    return {
      ...result,
      searchId: this.options.learning?.rememberSkills(caller, fts ? search.query : "", hits) ?? "",
    };
  }

  /** The skills for a task, as one block to put in a prompt, within a token budget. */
  async relevant(caller: Caller, input: GetRelevantSkillsInput) {
    const { library, semantic } = this.options;
    await library.ready();
    const task = library.prepareTask(caller, input);
    const meaning = semantic ? await semantic.evidence(library.taskMeaning(task)) : undefined;
    const learned = await this.learned(caller, task.query, meaning);
    const result = await library.relevantPrepared(caller, task, {
      ...this.gate(caller),
      semantic: meaning,
      learned,
    });
    const names = result.skills.map((skill) => skill.name);
    return { ...result, searchId: this.options.learning?.rememberSkills(caller, task.query, names) ?? "" };
  }

  get(caller: Caller, input: GetSkillsInput) {
    return this.options.library.getSkills(caller, input, this.gate(caller));
  }

  list(caller: Caller, input: ListSkillsInput) {
    return this.options.library.listSkills(caller, input, this.gate(caller));
  }

  directory(caller: Caller, input: RenderSkillDirectoryInput) {
    return this.options.library.renderSkillDirectory(caller, input, this.gate(caller));
  }

  /**
   * An agent's verdict on a skill it used: NOT_FOUND for a skill the caller cannot see (as for a
   * missing one); teaches the tenant's ranking when `searchId` names a search of its that showed it.
   */
  async reportOutcome(
    caller: Caller,
    report: { searchId: string; name: string; outcome: Outcome; note: string; key: string },
  ): Promise<{ duplicate: boolean; learned: boolean }> {
    const found = this.options.library.searchSkills(
      caller,
      { query: report.name, type: "exact", limit: 1 },
      this.gate(caller),
    );
    const skill = found.skills[0];
    if (!skill) throw notFound(`skill ${quoteInput(report.name)} not found; use skill_search to find skills`);
    const { learning } = this.options;
    if (!learning) return { duplicate: false, learned: false };
    // As named in the library (exact search also finds it by another case or separators).
    const result = await learning.report(caller, { ...report, name: skill.name, kind: "skill" });
    if (!result.known) throw unknownSearch(report.searchId);
    return { duplicate: result.duplicate, learned: result.learned };
  }

  private gate(caller: Caller) {
    return { toolGate: this.options.toolGateFor(caller) };
  }

  /** What the caller's tenant learned of skills for `text`, read with its meaning when it was embedded. */
  private learned(caller: Caller, text: string, meaning: SemanticEvidence<SkillWordIndex> | undefined) {
    return this.options.learning?.evidence(caller, text, meaning?.vectors ?? [], "skill");
  }
}
