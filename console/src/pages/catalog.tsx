import { useMemo, useState } from "preact/hooks";
import {
  LoadingModeSchema,
  SideEffectSchema,
  type ToolSummary,
} from "../../../gen/ts/wayfind/v1/tools_pb.ts";
import { callerAs } from "../api.ts";
import { count, enumLabel } from "../format.ts";
import { everyPage, useCall } from "../hooks.ts";
import type { PageProps } from "../page.ts";
import { Problem } from "../parts/problem.tsx";

/** Listings past this many tools are cut (the filter then narrows them). */
const MAX_LISTED = 10_000;
const NO_NAMESPACE = "(no namespace)";

/** Every tool the tenant could use, by source and namespace; one tool's schema and examples on demand. */
export function CatalogPage({ session, tenant }: PageProps) {
  const { api } = session;
  const caller = callerAs(tenant);
  const listing = useCall(
    (signal) =>
      everyPage(
        (pageToken) =>
          api.tools
            .listTools({ caller, pageSize: 500, pageToken, showAllTools: true }, { signal })
            .then((page) => ({ items: page.tools, nextPageToken: page.nextPageToken })),
        MAX_LISTED,
      ),
    [tenant],
  );
  const [filter, setFilter] = useState("");
  const [source, setSource] = useState("");
  const [namespace, setNamespace] = useState("");
  const [chosen, setChosen] = useState<string | undefined>();

  const all = listing.value ?? [];
  const sources = useMemo(() => countedBy(all, (tool) => tool.source), [listing.value]);
  const ofSource = all.filter((tool) => source === "" || tool.source === source);
  const namespaces = useMemo(() => countedBy(ofSource, namespaceOf), [listing.value, source]);
  const words = filter.toLowerCase();
  const shown = ofSource.filter(
    (tool) =>
      (namespace === "" || namespaceOf(tool) === namespace) &&
      (words === "" ||
        tool.name.toLowerCase().includes(words) ||
        tool.description.toLowerCase().includes(words)),
  );

  return (
    <>
      <Problem text={listing.problem} />
      <p class="lead">
        {listing.value ? `${count(listing.value.length)} tools` : "Loading…"}{" "}
        {tenant ? `as tenant ${tenant} sees them` : "as this credential sees them"}.
      </p>
      <div class="toolbar">
        <label>
          Source{" "}
          <select
            value={source}
            onChange={(event) => {
              setSource(event.currentTarget.value);
              setNamespace("");
            }}
          >
            <option value="">all ({count(all.length)})</option>
            {[...sources].map(([name, size]) => (
              <option key={name} value={name}>
                {name} ({count(size)})
              </option>
            ))}
          </select>
        </label>
        <label>
          Namespace{" "}
          <select value={namespace} onChange={(event) => setNamespace(event.currentTarget.value)}>
            <option value="">all ({count(ofSource.length)})</option>
            {[...namespaces].map(([name, size]) => (
              <option key={name} value={name}>
                {name} ({count(size)})
              </option>
            ))}
          </select>
        </label>
        <label>
          Filter{" "}
          <input type="search" value={filter} onInput={(event) => setFilter(event.currentTarget.value)} />
        </label>
      </div>
      <div class="split">
        <table class="grid" aria-label="Tools">
          <thead>
            <tr>
              <th scope="col">Tool</th>
              <th scope="col">Source</th>
              <th scope="col">Loading</th>
              <th scope="col">Description</th>
            </tr>
          </thead>
          <tbody>
            {shown.slice(0, 500).map((tool) => (
              <tr key={tool.name} aria-selected={tool.name === chosen}>
                <td>
                  <button type="button" class="link" onClick={() => setChosen(tool.name)}>
                    {tool.name}
                  </button>
                </td>
                <td>{tool.source}</td>
                <td>{enumLabel(LoadingModeSchema, tool.loadingMode)}</td>
                <td>{tool.description}</td>
              </tr>
            ))}
          </tbody>
        </table>
        {chosen ? <ToolDetail key={chosen} session={session} tenant={tenant} name={chosen} /> : null}
      </div>
      {shown.length > 500 ? <p>Showing 500 of {count(shown.length)}; narrow the filter.</p> : null}
    </>
  );
}

function ToolDetail({ session, tenant, name }: PageProps & { name: string }) {
  const detail = useCall(
    (signal) =>
      session.api.tools
        .getTools(
          { caller: callerAs(tenant), names: [name], includeSchemas: true, includeExamples: true },
          { signal },
        )
        .then((answer) => answer.tools[0]),
    [name, tenant],
  );
  const tool = detail.value;
  return (
    <section class="detail" aria-label={`Tool ${name}`}>
      <h2>{name}</h2>
      <Problem text={detail.problem} />
      {tool ? (
        <>
          <dl>
            <dt>Source</dt>
            <dd>{tool.source || "–"}</dd>
            <dt>Loading</dt>
            <dd>{enumLabel(LoadingModeSchema, tool.loadingMode)}</dd>
            <dt>Side effect</dt>
            <dd>{enumLabel(SideEffectSchema, tool.sideEffect)}</dd>
            {tool.tags.length > 0 ? (
              <>
                <dt>Tags</dt>
                <dd>{tool.tags.join(", ")}</dd>
              </>
            ) : null}
          </dl>
          <p>{tool.description}</p>
          <h3>Arguments (JSON Schema)</h3>
          {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling box must take focus, or keyboard users cannot scroll it */}
          <pre tabIndex={0}>{JSON.stringify(tool.argsSchema ?? {}, null, 2)}</pre>
          {tool.examples.length > 0 ? (
            <>
              <h3>Examples</h3>
              {tool.examples.map((example, index) => (
                <div key={index}>
                  <p>{example.description}</p>
                  {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling box must take focus, or keyboard users cannot scroll it */}
                  <pre tabIndex={0}>{JSON.stringify(example.args ?? {}, null, 2)}</pre>
                </div>
              ))}
            </>
          ) : null}
        </>
      ) : detail.loading ? (
        <p>Loading…</p>
      ) : detail.problem ? null : (
        <p>Not visible to this tenant.</p>
      )}
    </section>
  );
}

function namespaceOf(tool: ToolSummary): string {
  return tool.namespace || NO_NAMESPACE;
}

/** How many tools fall in each group, by group name. */
function countedBy(
  tools: readonly ToolSummary[],
  groupOf: (tool: ToolSummary) => string,
): Map<string, number> {
  const sizes = new Map<string, number>();
  for (const tool of tools) sizes.set(groupOf(tool), (sizes.get(groupOf(tool)) ?? 0) + 1);
  return new Map([...sizes].sort(([a], [b]) => a.localeCompare(b)));
}
