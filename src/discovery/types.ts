/** Plain domain types of the tool catalog; no transport types. */

import type { JsonObject } from "../json.ts";
import type { MatchType, SearchReport, SearchType } from "../search/answer.ts";
import type { VectorDocs } from "../search/evidence.ts";
import type { HybridEvidence } from "../search/hybrid.ts";
import type { LexicalRequest } from "../search/lexical.ts";
import type { PatternDocs } from "../search/patterns.ts";
import type { Candidates } from "../search/ranker-options.ts";

export const SIDE_EFFECTS = ["pure", "read", "write", "external", "stateful"] as const;
export type SideEffects = (typeof SIDE_EFFECTS)[number];

export const LOADING_MODES = ["always", "deferred"] as const;
export type LoadingMode = (typeof LOADING_MODES)[number];

export interface ToolExample {
  readonly args: JsonObject;
  readonly description: string;
  readonly tags: readonly string[];
}

/** A tool as given to `register` (names may still need the namespace prefix). */
export interface ToolInput {
  readonly name: string;
  /** Prefixed to `name` as `ns.name` unless the name already starts with `ns.`. */
  readonly namespace?: string;
  readonly title?: string;
  readonly description?: string;
  readonly tags?: readonly string[];
  readonly sideEffects?: SideEffects;
  readonly loadingMode?: LoadingMode;
  readonly argsSchema?: JsonObject;
  readonly outputSchema?: JsonObject;
  readonly examples?: readonly ToolExample[];
  readonly aliases?: readonly string[];
}

/** A registered tool, full definition as returned by `get`. */
export interface Tool {
  readonly name: string;
  readonly namespace: string;
  readonly source: string;
  /** The tenant that registered it, or "" for a global (operator) tool. Names are unique per owner. */
  readonly owner: string;
  readonly title: string;
  readonly description: string;
  readonly tags: readonly string[];
  readonly sideEffects: SideEffects;
  readonly loadingMode: LoadingMode;
  readonly argsSchema: JsonObject;
  readonly outputSchema: JsonObject | null;
  readonly examples: readonly ToolExample[];
  readonly aliases: readonly string[];
  /** sha256 of the canonical JSON of everything above except `source` and `owner`. */
  readonly hash: string;
}

export interface RegisterOptions {
  /** Remove this source's tools that are not in the request. */
  readonly replaceSource?: boolean;
  /** Whose tools these are: a tenant id, or "" (the default) for global tools. */
  readonly owner?: string;
}

export interface RegisterResult {
  readonly added: number;
  readonly updated: number;
  readonly removed: number;
  readonly unchanged: number;
  /** sha256 over the sorted (name, hash) pairs of the owner's tools after the call. */
  readonly fingerprint: string;
}

/** Caller identity copied onto events; all optional. */
export interface EventScope {
  readonly tenantId?: string;
  readonly sessionId?: string;
  readonly runId?: string;
}

/**
 * The in-memory search index of one state of the catalog (every owner's tools): the docs in name
 * order, the BM25F ranker over their analysed text, name keys, tie-break order and the folded text
 * the regex path reads. Built by `buildSearchIndex`, a generator the catalog runs in slices between
 * other calls after a change (or to its end when a caller reads before the slices are done).
 */
/**
 * The tools of one build as the search core reads them: the ranker over their fields, the nameKey of
 * full name, bare name and aliases → doc ids, and their names and texts (description, tags) for
 * regex and exact search.
 */
export interface SearchIndex extends PatternDocs, VectorDocs {
  /** Tools sorted by name, then owner; position = doc id. */
  readonly docs: readonly Tool[];
  /** Exact name → its first doc id; docs of the same name (one per owner) follow it (see sameName). */
  readonly byName: ReadonlyMap<string, number>;
  /** The deferred docs: what a search without a visible set may return unless always-loaded are asked for. */
  readonly deferred: Candidates;
}

/**
 * Whether a tool of `owner` exists for a caller of `tenant`: its tenant's own, or a global tool its
 * tenant has none of the same name of (`tenantHasOwn`, asked only then). Other tenants' tools never
 * exist for it; a tenant-less caller has the global tools. The registry and the index's masks both
 * ask this one rule.
 */
export function toolExistsFor(owner: string, tenant: string, tenantHasOwn: () => boolean): boolean {
  return owner === tenant || (owner === "" && !tenantHasOwn());
}

/** The bits of a tool's access verdict in ToolView.access (src/access decides them). */
export const VERDICT = {
  /** The caller may see, get and activate the tool. */
  canActivate: 1,
  /** And it is in every prompt without activation. */
  alwaysVisible: 2,
} as const;

/**
 * What one caller sees of one build of the index, as a value: search and list mask the build with
 * it (views.ts), and the mask is kept with the build by the view's verdict array and other fields,
 * so nothing is asked of the caller per tool, and a mask is made once, not per search.
 */
export interface ToolView {
  /** The build it reads (IndexHost.ready); `access` is over its docs. */
  readonly index: SearchIndex;
  /** Whose tools exist for it: the tenant's own and the global ones it did not shadow ("" = global only). */
  readonly tenant: string;
  /** Per doc of `index`, the caller's access verdict in VERDICT bits (src/access evaluates the rules). */
  readonly access: Uint8Array;
  /** Names the caller activated: in its prompt, as always-visible tools are. */
  readonly activeNames: readonly string[];
  /** Tool search is off: every tool the caller may activate is in its prompt. */
  readonly allShown: boolean;
}

/**
 * The tools of one build of the index that a scope of a view takes (views.ts): the mask search ranks
 * under and list pages through, with the corpus statistics over it counted once.
 */
export interface VisibleSet {
  /** The build the set is over. */
  readonly index: SearchIndex;
  readonly candidates: Candidates;
  /** Deferred tools in the set (what search can reveal). */
  readonly totalDeferred: number;
}

export interface SearchRequest {
  readonly query: string;
  /** Default "fts". */
  readonly type?: SearchType;
  /** 1–20, default 8. */
  readonly limit?: number;
  /** 0–1: hits scoring below it are dropped; default 0 (keep every hit). */
  readonly minScore?: number;
  /**
   * Include the tools already in the prompt: the view's always-visible and activated ones (without a
   * view, `loading_mode: always` tools); default false.
   */
  readonly includeAlwaysLoaded?: boolean;
  /**
   * THE visibility filter: the caller's view, whose build the search reads; hidden tools never
   * appear, count or shift ranking. Default: every tool of the newest build.
   */
  readonly view?: ToolView;
  readonly scope?: EventScope;
}

/**
 * A search request validated, its query canonicalised, masked with the caller's view and read once
 * (IndexHost.prepare): the meaning of the request (IndexHost.meaningOf) and its search both consume
 * it, so neither reads the request again.
 */
export interface PreparedSearch extends LexicalRequest {
  /** The query as searched: a renamed tool's old name is its current name, whatever the type. */
  readonly query: string;
  readonly limit: number;
  readonly minScore: number;
  /** The build searched, and the docs of it the request may find (undefined: all). */
  readonly index: SearchIndex;
  readonly candidates: Candidates | undefined;
  /** Deferred tools the caller may find (what search can reveal). */
  readonly totalDeferred: number;
  readonly scope: EventScope | undefined;
}

/**
 * What is known of a request besides its words (the meaning over its meaningOf, what the caller's
 * tenant learned), worked out before its search and applied in it (FTS only).
 */
export type SearchEvidence = HybridEvidence<SearchIndex>;

export interface SearchHit {
  readonly name: string;
  readonly description: string;
  /** The final score in [0, 1]: lexical, or lexical fused with semantic. */
  readonly score: number;
  readonly lexicalScore: number;
  /** 0 when semantic ranking did not take part for this tool. */
  readonly semanticScore: number;
  /** In [-1, 1]; 0 when learning said nothing of this tool (LearnedEvidence). */
  readonly learnedScore: number;
  readonly matchType: MatchType;
  readonly loadingMode: LoadingMode;
}

export interface SearchResponse extends SearchReport {
  readonly tools: readonly SearchHit[];
  /** Visible deferred tools in the whole catalog (what search can reveal). */
  readonly totalDeferred: number;
}

export interface ListRequest {
  /** Default 100, max 500. */
  readonly pageSize?: number;
  readonly pageToken?: string;
  /**
   * The caller's view: the page is read from its build, through its mask. Default: every tool of the
   * newest build.
   */
  readonly view?: ToolView;
  /** With a view: every tool it may activate, not only those in its prompt now. */
  readonly showAll?: boolean;
}

export interface ListResponse {
  /** One page, in name order. */
  readonly tools: readonly Tool[];
  /** Empty when this is the last page. */
  readonly nextPageToken: string;
  readonly totalSize: number;
}
