/**
 * Skill Packs as the MCP skills extension (`io.modelcontextprotocol/skills`, SEP-2640): `skills/list`
 * (ListSkills, a page at a time), `skills/get`, and each skill as one `SKILL.md` at
 * `skill://<folder>/SKILL.md`, listed by `resources/list` (for clients that attach resources to a
 * conversation) and read by `resources/read` — the caller's skills only, redacted and tool-gated as
 * GetSkills gives them. A skill's file is written for the caller who reads it, so a listing names
 * its files `dynamic` (nothing is read, and no use is recorded, to list); `skills/get` and a read give
 * the file with its digest, the same on every replica for the same skill and caller.
 */
import { createHash } from "node:crypto";
import { ErrorCode } from "@modelcontextprotocol/sdk/types.js";
import { stringify } from "yaml";
import { type Skill, SkillFormat } from "../../gen/ts/wayfind/v1/skills_pb.ts";
import type { JsonObject } from "../json.ts";
import { listedTrigger } from "../skills/index.ts";
import { JsonRpcRefusal } from "../tools/mcp-session.ts";
import type { CallScope, WayfindClients } from "./meta-tools.ts";
import { getSkill, type SkillsPage, skillItems } from "./session-skills.ts";

export const SKILL_SCHEME = "skill://";

/** The extension's identifier, under `capabilities.extensions`. */
export const SKILLS_EXTENSION_ID = "io.modelcontextprotocol/skills";

const MANIFEST = "SKILL.md";
/** What the extension allows as a skill folder's last segment, which is its frontmatter name. */
const LEAF = /^[a-z0-9]+(-[a-z0-9]+)*$/;
const MAX_LEAF = 64;
/** The first segment of the folder of a skill whose name does not fit LEAF segment by segment. */
const ENCODED = "_";

/**
 * The folder under `skill://` of the skill wayfind names `name`: its dotted parts as folders
 * (`pack.core.deploy` → `pack/core/deploy`) when each fits the extension's rule; otherwise the name
 * encoded whole, then a slug of it as the last segment (`_/Deploy_Prod/deploy-prod`).
 */
function skillFolder(name: string): string {
  const parts = name.split(".");
  if (parts.every((part) => part.length <= MAX_LEAF && LEAF.test(part))) return parts.join("/");
  return `${ENCODED}/${encodeURIComponent(name)}/${slug(name)}`;
}

/** The name of the skill whose `SKILL.md` is at `uri`; undefined for any other URI. */
function skillOfManifest(uri: string): string | undefined {
  if (!uri.startsWith(SKILL_SCHEME) || !uri.endsWith(`/${MANIFEST}`)) return undefined;
  const folder = uri.slice(SKILL_SCHEME.length, -MANIFEST.length - 1);
  const parts = folder.split("/");
  let name: string;
  try {
    name = parts[0] === ENCODED && parts.length === 3 ? decodeURIComponent(parts[1] ?? "") : parts.join(".");
  } catch {
    return undefined;
  }
  // Only the folder a name has: `..`, empty or doubled segments, another spelling — none.
  return name !== "" && skillFolder(name) === folder ? name : undefined;
}

/** `resources/list`'s first part: a page of the caller's skills, each as its `SKILL.md`. */
export function skillResources(
  clients: WayfindClients,
  scope: CallScope,
  token: string,
): Promise<SkillsPage> {
  return skillItems(clients, scope, token, (skill) => {
    const { name, description } = frontmatter({ ...skill, trigger: skill.description });
    return {
      uri: manifestUri(skill.name),
      name,
      title: skill.title || skill.name,
      description,
      mimeType: "text/markdown",
    };
  });
}

/** `skills/list`: a page of the caller's skills; the cursor is ListSkills' page token. */
export async function listSkillEntries(
  clients: WayfindClients,
  scope: CallScope,
  cursor: string | undefined,
): Promise<JsonObject> {
  const page = await skillItems(clients, scope, cursor ?? "", (skill) => ({
    uri: manifestUri(skill.name),
    // ListSkills gives a skill's trigger, as a listing shows it, as its description.
    frontmatter: frontmatter({ ...skill, trigger: skill.description }),
    resources: "dynamic",
  }));
  return { skills: page.items, ...(page.next === undefined ? {} : { nextCursor: page.next }) };
}

/** `skills/get`: the entry of the skill whose `SKILL.md` is at `uri`, its file's digest and size. */
export async function getSkillEntry(
  clients: WayfindClients,
  scope: CallScope,
  uri: string,
): Promise<JsonObject> {
  const manifest = await readManifest(clients, scope, uri);
  if (manifest === undefined) throw unknownSkill(uri);
  const bytes = Buffer.from(manifest.text, "utf8");
  return {
    skill: {
      uri,
      frontmatter: manifest.frontmatter,
      resources: [
        { uri, digest: `sha256:${createHash("sha256").update(bytes).digest("hex")}`, size: bytes.length },
      ],
    },
  };
}

/** `resources/read` of a skill's `SKILL.md`; undefined when the caller has no such skill. */
export async function readSkillManifest(
  clients: WayfindClients,
  scope: CallScope,
  uri: string,
): Promise<JsonObject | undefined> {
  const manifest = await readManifest(clients, scope, uri);
  return manifest === undefined
    ? undefined
    : { contents: [{ uri, mimeType: "text/markdown", text: manifest.text }] };
}

/** The error of a skill the caller has none of: the same whether it is hidden or missing. */
function unknownSkill(uri: string): JsonRpcRefusal {
  return new JsonRpcRefusal(
    ErrorCode.InvalidParams,
    `no skill is served at ${JSON.stringify(uri.slice(0, 300))}`,
  );
}

function manifestUri(name: string): string {
  return `${SKILL_SCHEME}${skillFolder(name)}/${MANIFEST}`;
}

/**
 * What a `SKILL.md` of a skill says of it up front: its folder's last segment, and when to use it —
 * its trigger as ListSkills gives it (`description`), so a listing and a read agree.
 */
function frontmatter(skill: { name: string; title: string; trigger: string }) {
  const parts = skillFolder(skill.name).split("/");
  return {
    name: parts[parts.length - 1] ?? "",
    description: (skill.trigger || skill.title || skill.name).replace(/\s+/g, " ").trim(),
    metadata: { "wayfind-name": skill.name },
  };
}

/** The skill at `uri` as the caller sees it (GetSkills: it is a use), written as a `SKILL.md`. */
async function readManifest(
  clients: WayfindClients,
  scope: CallScope,
  uri: string,
): Promise<{ frontmatter: ReturnType<typeof frontmatter>; text: string } | undefined> {
  const name = skillOfManifest(uri);
  if (name === undefined) return undefined;
  const got = await getSkill(clients, scope, name, SkillFormat.RAW);
  const skill = got?.skills[0];
  if (skill === undefined) return undefined;
  const front = frontmatter({ ...skill, trigger: listedTrigger(skill.trigger) });
  return { frontmatter: front, text: `---\n${stringify(front)}---\n\n${body(skill)}` };
}

/** The skill's procedure in Markdown: title, when to use it, steps, preconditions, failure modes. */
function body(skill: Skill): string {
  const sections = [`# ${skill.title || skill.name}`];
  if (skill.description) sections.push(skill.description);
  if (skill.trigger) sections.push(`Use when: ${skill.trigger}`);
  const list = (heading: string, items: readonly string[], numbered: boolean) => {
    if (items.length === 0) return;
    sections.push(
      `## ${heading}\n\n${items.map((item, i) => `${numbered ? `${i + 1}.` : "-"} ${item}`).join("\n")}`,
    );
  };
  list("Preconditions", skill.preconditions, false);
  list("Steps", skill.steps, true);
  list("Failure modes", skill.failureModes, false);
  return `${sections.join("\n\n")}\n`;
}

/** A slug that fits LEAF: lower case, runs of anything else as one hyphen, at most MAX_LEAF characters. */
function slug(name: string): string {
  const words = name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "");
  return words.slice(0, MAX_LEAF).replace(/-+$/, "") || "skill";
}
