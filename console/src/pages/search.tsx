import { useState } from "preact/hooks";
import {
  MatchQualitySchema,
  MatchTypeSchema,
  QueryRewrite_KindSchema,
  SearchType,
  SearchTypeSchema,
  SemanticStatusSchema,
  SemanticTier,
  SemanticTierSchema,
} from "../../../gen/ts/wayfind/v1/common_pb.ts";
import type { SearchToolsResponse } from "../../../gen/ts/wayfind/v1/tools_pb.ts";
import { callerAs, problemOf } from "../api.ts";
import { enumLabel, score } from "../format.ts";
import type { PageProps } from "../page.ts";
import { Problem } from "../parts/problem.tsx";

/** Two searches side by side: compare two phrasings, two search types, or two tenants. */
export function SearchPage(props: PageProps) {
  return (
    <div class="side-by-side">
      <SearchPanel {...props} label="Request A" />
      <SearchPanel {...props} label="Request B" />
    </div>
  );
}

const TYPES = [SearchType.UNSPECIFIED, SearchType.REGEX, SearchType.EXACT];
/** Half the last digit a score shows (score() prints three decimals). */
const SHOWN_SCORE_FLOOR = 0.0005;

/** One request as an agent would send it, and every part of each hit's score. */
function SearchPanel({ session, tenant, label }: PageProps & { label: string }) {
  const [query, setQuery] = useState("");
  const [type, setType] = useState(SearchType.UNSPECIFIED);
  const [asTenant, setAsTenant] = useState(tenant);
  const [answer, setAnswer] = useState<SearchToolsResponse | undefined>();
  const [problem, setProblem] = useState<string | undefined>();

  const run = async (event: Event) => {
    event.preventDefault();
    if (!query.trim()) return;
    try {
      const response = await session.api.tools.searchTools({
        caller: callerAs(session.operator ? asTenant : ""),
        query,
        searchType: type,
        limit: 20,
        // Hits whose score would print as 0.000 say nothing about the request: the server leaves them out.
        minScore: SHOWN_SCORE_FLOOR,
        includeAlwaysLoaded: true,
      });
      setAnswer(response);
      setProblem(undefined);
    } catch (error) {
      setAnswer(undefined);
      setProblem(problemOf(error));
    }
  };

  return (
    <section class="panel" aria-label={label}>
      <h2>{label}</h2>
      <form onSubmit={run} class="search-form">
        <label>
          Request{" "}
          <input type="search" value={query} onInput={(event) => setQuery(event.currentTarget.value)} />
        </label>
        <label>
          Type{" "}
          <select value={type} onChange={(event) => setType(Number(event.currentTarget.value) as SearchType)}>
            {TYPES.map((t) => (
              <option key={t} value={t}>
                {t === SearchType.UNSPECIFIED ? "hybrid (words and meaning)" : enumLabel(SearchTypeSchema, t)}
              </option>
            ))}
          </select>
        </label>
        {session.operator ? (
          <label>
            Tenant{" "}
            <input value={asTenant} onInput={(event) => setAsTenant(event.currentTarget.value.trim())} />
          </label>
        ) : null}
        <button type="submit">Search</button>
      </form>
      <Problem text={problem} />
      {answer ? <Hits answer={answer} /> : null}
    </section>
  );
}

function Hits({ answer }: { answer: SearchToolsResponse }) {
  return (
    <>
      <dl class="inline" aria-label="How the search ran">
        <dt>Match quality</dt>
        <dd data-match-quality>{enumLabel(MatchQualitySchema, answer.matchQuality)}</dd>
        <dt>Ran as</dt>
        <dd>{enumLabel(SearchTypeSchema, answer.effectiveSearchType)}</dd>
        <dt>Semantic</dt>
        <dd data-semantic>
          {enumLabel(SemanticStatusSchema, answer.semanticStatus)}
          {answer.semanticTier === SemanticTier.UNSPECIFIED
            ? ""
            : ` (read by ${enumLabel(SemanticTierSchema, answer.semanticTier)})`}
        </dd>
        {answer.queryRewrites.length > 0 ? (
          <>
            <dt>Rewrites</dt>
            <dd>
              {answer.queryRewrites
                .map((r) => `${r.from} → ${r.to} (${enumLabel(QueryRewrite_KindSchema, r.kind)})`)
                .join(", ")}
            </dd>
          </>
        ) : null}
      </dl>
      <table class="grid hits">
        <caption>Hits</caption>
        <thead>
          <tr>
            <th scope="col">Tool</th>
            <th scope="col">Score</th>
            <th scope="col">Lexical</th>
            <th scope="col">Semantic</th>
            <th scope="col">Learned</th>
            <th scope="col">Match</th>
          </tr>
        </thead>
        <tbody>
          {answer.tools.map((hit) => (
            <tr key={hit.name} data-tool={hit.name}>
              <td title={hit.description}>{hit.name}</td>
              <td data-part="score">{score(hit.score)}</td>
              <td data-part="lexical">{score(hit.lexicalScore)}</td>
              <td data-part="semantic">{score(hit.semanticScore)}</td>
              <td data-part="learned">{score(hit.learnedScore)}</td>
              <td>{enumLabel(MatchTypeSchema, hit.matchType)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {answer.tools.length === 0 ? <p>No tool matches this request.</p> : null}
    </>
  );
}
