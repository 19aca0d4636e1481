import { useState } from "preact/hooks";
import { type GetRelevantSkillsResponse, TaskTypeSchema } from "../../../gen/ts/wayfind/v1/skills_pb.ts";
import { callerAs, problemOf } from "../api.ts";
import { count, enumLabel } from "../format.ts";
import { everyPage, useCall } from "../hooks.ts";
import type { PageProps } from "../page.ts";
import { Problem } from "../parts/problem.tsx";

/** Listings past this many skills are cut. */
const MAX_LISTED = 5_000;

/** The skills the tenant sees, and what GetRelevantSkills would inject for a task within a budget. */
export function SkillsPage({ session, tenant }: PageProps) {
  const caller = callerAs(tenant);
  const listing = useCall(
    (signal) =>
      everyPage(
        (pageToken) =>
          session.api.skills
            .listSkills({ caller, pageSize: 100, pageToken }, { signal })
            .then((page) => ({ items: page.skills, nextPageToken: page.nextPageToken })),
        MAX_LISTED,
      ),
    [tenant],
  );
  const [task, setTask] = useState("");
  const [budget, setBudget] = useState(1500);
  const [preview, setPreview] = useState<GetRelevantSkillsResponse | undefined>();
  const [problem, setProblem] = useState<string | undefined>();

  const run = async (event: Event) => {
    event.preventDefault();
    if (!task.trim()) return;
    try {
      setPreview(await session.api.skills.getRelevantSkills({ caller, task, maxTokens: budget }));
      setProblem(undefined);
    } catch (error) {
      setPreview(undefined);
      setProblem(problemOf(error));
    }
  };

  return (
    <>
      <section class="panel" aria-label="Preview an injection">
        <h2>What would an agent get?</h2>
        <form onSubmit={run} class="search-form">
          <label>
            Task <input type="search" value={task} onInput={(event) => setTask(event.currentTarget.value)} />
          </label>
          <label>
            Token budget{" "}
            <input
              type="number"
              min={200}
              max={6000}
              step={100}
              value={budget}
              onInput={(event) => setBudget(Number(event.currentTarget.value))}
            />
          </label>
          <button type="submit">Preview</button>
        </form>
        <Problem text={problem} />
        {preview ? (
          preview.skillNames.length === 0 ? (
            <p>No skill is relevant to this task.</p>
          ) : (
            <>
              <p>
                {preview.skillNames.join(", ")} · {count(preview.tokenEstimate)} tokens
                {preview.wasCompressed ? ` (compressed from ${count(preview.rawTokenEstimate)})` : ""}
              </p>
              {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling box must take focus, or keyboard users cannot scroll it */}
              <pre tabIndex={0} class="injection">
                {preview.formattedContext}
              </pre>
            </>
          )
        ) : null}
      </section>
      <Problem text={listing.problem} />
      <table class="grid">
        <caption>Skills ({count(listing.value?.length ?? 0)})</caption>
        <thead>
          <tr>
            <th scope="col">Skill</th>
            <th scope="col">Task type</th>
            <th scope="col">Description</th>
          </tr>
        </thead>
        <tbody>
          {listing.value?.map((skill) => (
            <tr key={skill.name}>
              <td>{skill.title || skill.name}</td>
              <td>{enumLabel(TaskTypeSchema, skill.taskType)}</td>
              <td>{skill.description}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}
