import { createHash } from "node:crypto";
import {
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernTransport,
} from "@modelcontextprotocol/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { SkillScope, SkillService } from "../../gen/ts/wayfind/v1/skills_pb.ts";
import { apiKey } from "../support/auth.ts";
import { endpointFixtureDir } from "../support/mcp-session.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

/**
 * Skill Packs over MCP as the skills extension (io.modelcontextprotocol/skills, SEP-2640): skills/list,
 * skills/get and each skill's SKILL.md at skill://<folder>/SKILL.md, for 2026-07-28 requests and
 * 2025-11-25 sessions alike — the caller's skills only, as GetSkills gives them.
 */

const acme = apiKey("acme-agent", { tenant: "acme", roles: ["agent"] });
const bravo = apiKey("bravo-agent", { tenant: "bravo", roles: ["agent"] });
const acmeAdmin = apiKey("acme-admin", { tenant: "acme", roles: ["admin"] });

/** A skill only acme's tenant sees, its name not of the extension's form (dots, upper case, `_`). */
const acmeSkill = `---
name: acme.Deploy_Prod
title: Deploy the storefront
description: Ships the storefront to production.
trigger: A release must go out.
steps:
  - Run the deploy.
  - Watch the status page.
---
`;

let wayfind: TestServer;
beforeAll(async () => {
  wayfind = await startTestServer(
    {
      skill_packs: [{ name: "core", path: "skills" }],
      auth: { allow_unauthenticated: false, api_keys: [acme.entry, bravo.entry, acmeAdmin.entry] },
    },
    { dataDir: endpointFixtureDir() },
  );
  // 120 more skills of the core pack's tenant-wide kind, so a listing takes pages.
  const files = Array.from({ length: 120 }, (_, i) => ({
    path: `s${i}.skill.md`,
    content: `---\nname: bulk-${String(i).padStart(3, "0")}\ntrigger: Step ${i} is due.\nsteps: [Do step ${i}.]\n---\n`,
  }));
  await wayfind.grpc(SkillService).loadSkillPack(
    {
      caller: { tenantId: "acme" },
      packName: "bulk",
      scope: SkillScope.TENANT,
      source: { case: "files", value: { files } },
    },
    { headers: { authorization: `Bearer ${acmeAdmin.secret}` } },
  );
  await wayfind.grpc(SkillService).loadSkillPack(
    {
      caller: { tenantId: "acme" },
      packName: "acme-ops",
      scope: SkillScope.TENANT,
      source: { case: "files", value: { files: [{ path: "deploy.skill.md", content: acmeSkill }] } },
    },
    { headers: { authorization: `Bearer ${acmeAdmin.secret}` } },
  );
}, 60_000);
afterAll(() => wayfind.stop());

const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const client of opened.splice(0)) await client.close();
});

const url = () => new URL(`${wayfind.baseUrl}/mcp`);
const auth = (secret: string) => ({ requestInit: { headers: { authorization: `Bearer ${secret}` } } });

async function modernClient(secret: string): Promise<ModernClient> {
  const client = new ModernClient(
    { name: "skills-test", version: "1.0.0" },
    { versionNegotiation: { mode: { pin: "2026-07-28" } } },
  );
  await client.connect(new ModernTransport(url(), auth(secret)));
  opened.push(client);
  return client;
}

const Entry = z.looseObject({
  uri: z.string(),
  frontmatter: z.looseObject({ name: z.string(), description: z.string() }),
  resources: z.union([
    z.literal("dynamic"),
    z.array(z.object({ uri: z.string(), digest: z.string(), size: z.number() })),
  ]),
});
const ListResult = z.looseObject({
  skills: z.array(Entry),
  nextCursor: z.string().optional(),
  ttlMs: z.number().optional(),
  cacheScope: z.string().optional(),
});
const GetResult = z.looseObject({
  skill: Entry,
  ttlMs: z.number().optional(),
  cacheScope: z.string().optional(),
});

/** Every page of skills/list, as `client` (2.x or 1.x) reads it. */
async function listAll(
  request: (cursor: string | undefined) => Promise<z.infer<typeof ListResult>>,
): Promise<{ entries: z.infer<typeof Entry>[]; pages: z.infer<typeof ListResult>[] }> {
  const pages: z.infer<typeof ListResult>[] = [];
  for (let cursor: string | undefined; ; ) {
    const page = await request(cursor);
    pages.push(page);
    cursor = page.nextCursor;
    if (cursor === undefined) break;
  }
  return { entries: pages.flatMap((page) => page.skills), pages };
}

const modernList = (client: ModernClient) => (cursor: string | undefined) =>
  client.request({ method: "skills/list", params: cursor === undefined ? {} : { cursor } }, ListResult);

describe("the skills extension, to a 2026-07-28 client", () => {
  it("is declared in server/discover and lists every skill of the caller in pages, each entry once, cacheable privately", async () => {
    const client = await modernClient(acme.secret);
    expect(client.getServerCapabilities()?.extensions).toEqual({ "io.modelcontextprotocol/skills": {} });
    const { entries, pages } = await listAll(modernList(client));
    expect(pages.length).toBeGreaterThan(1);
    expect(pages[0]).toMatchObject({ ttlMs: 30_000, cacheScope: "private" });
    const uris = entries.map((entry) => entry.uri);
    expect(new Set(uris).size).toBe(uris.length);
    expect(entries.filter((entry) => entry.frontmatter.name.startsWith("bulk-"))).toHaveLength(120);
    for (const entry of entries) {
      // The folder's last segment is the frontmatter name; the files are written per caller.
      expect(entry.uri.split("/").at(-2)).toBe(entry.frontmatter.name);
      expect(entry.frontmatter.name).toMatch(/^[a-z0-9]+(-[a-z0-9]+)*$/);
      expect(entry.resources).toBe("dynamic");
    }
    // A name of dotted parts that fit the rule is folders; another is encoded whole, then slugged.
    expect(entries.find((entry) => entry.frontmatter.name === "paginate-cursor-api")?.uri).toBe(
      "skill://pack/core/paginate-cursor-api/SKILL.md",
    );
    expect(entries.find((entry) => entry.frontmatter.name === "acme-deploy-prod")).toEqual({
      uri: "skill://_/acme.Deploy_Prod/acme-deploy-prod/SKILL.md",
      frontmatter: {
        name: "acme-deploy-prod",
        description: "A release must go out.",
        metadata: { "wayfind-name": "acme.Deploy_Prod" },
      },
      resources: "dynamic",
    });
  });

  it("gets a skill's entry with its SKILL.md's digest and size, which resources/read gives byte for byte", async () => {
    const client = await modernClient(acme.secret);
    const uri = "skill://_/acme.Deploy_Prod/acme-deploy-prod/SKILL.md";
    const got = await client.request({ method: "skills/get", params: { uri } }, GetResult);
    expect(got).toMatchObject({ ttlMs: 30_000, cacheScope: "private", skill: { uri } });
    const read = await client.readResource({ uri });
    const text = (read.contents[0] as { text: string }).text;
    expect(text).toBe(
      [
        "---",
        "name: acme-deploy-prod",
        "description: A release must go out.",
        "metadata:",
        "  wayfind-name: acme.Deploy_Prod",
        "---",
        "",
        "# Deploy the storefront",
        "",
        "Ships the storefront to production.",
        "",
        "Use when: A release must go out.",
        "",
        "## Steps",
        "",
        "1. Run the deploy.",
        "2. Watch the status page.",
        "",
      ].join("\n"),
    );
    const bytes = Buffer.from(text, "utf8");
    expect(got.skill.resources).toEqual([
      { uri, digest: `sha256:${createHash("sha256").update(bytes).digest("hex")}`, size: bytes.length },
    ]);
  });

  it("serves another tenant's skill to no one else: not listed, and got or read exactly as a missing one", async () => {
    const client = await modernClient(bravo.secret);
    const { entries } = await listAll(modernList(client));
    expect(entries.map((entry) => entry.frontmatter.name)).not.toContain("acme-deploy-prod");
    expect(entries.filter((entry) => entry.frontmatter.name.startsWith("bulk-"))).toEqual([]);
    const hidden = "skill://_/acme.Deploy_Prod/acme-deploy-prod/SKILL.md";
    const missing = "skill://_/acme.Deploy_Prodd/acme-deploy-prodd/SKILL.md";
    const errorOf = (uri: string) =>
      client.request({ method: "skills/get", params: { uri } }, GetResult).then(
        () => undefined,
        (error: { code: number; message: string }) => ({ code: error.code, message: error.message }),
      );
    const [fromHidden, fromMissing] = [await errorOf(hidden), await errorOf(missing)];
    expect(fromHidden?.code).toBe(-32602);
    expect(fromHidden?.message.replace("Prod/acme-deploy-prod", "X")).toBe(
      fromMissing?.message.replace("Prodd/acme-deploy-prodd", "X"),
    );
    // A resource not found is -32602 on this revision (SEP-2164), with the URI asked for.
    await expect(client.readResource({ uri: hidden })).rejects.toMatchObject({
      code: -32602,
      data: { uri: hidden },
    });
  });

  it("refuses skill:// URIs that name no skill's folder (`..`, doubled slashes, another spelling) as unknown", async () => {
    const client = await modernClient(acme.secret);
    for (const uri of [
      "skill://bulk-001/../acme-deploy-prod/SKILL.md",
      "skill://_/acme.Deploy_Prod/../SKILL.md",
      "skill:///bulk-001/SKILL.md",
      "skill://_/bulk-001/bulk-001/SKILL.md",
      "skill://_/%E0%A4%A/x/SKILL.md",
      "skill://bulk-001/README.md",
    ]) {
      await expect(
        client.request({ method: "skills/get", params: { uri } }, GetResult),
        uri,
      ).rejects.toMatchObject({
        code: -32602,
      });
      await expect(client.readResource({ uri }), uri).rejects.toMatchObject({ code: -32602 });
    }
  });
});

describe("the skills extension, to a 2025-11-25 session", () => {
  it("lists and gets the same entries as a 2026 client, and resources/list gives each SKILL.md", async () => {
    const legacy = new Client({ name: "legacy", version: "1.0.0" });
    await legacy.connect(new StreamableHTTPClientTransport(url(), auth(acme.secret)));
    opened.push(legacy);
    expect(legacy.getServerCapabilities()?.extensions).toEqual({ "io.modelcontextprotocol/skills": {} });
    const { entries } = await listAll((cursor) =>
      legacy.request({ method: "skills/list", params: cursor === undefined ? {} : { cursor } }, ListResult),
    );
    const modern = await listAll(modernList(await modernClient(acme.secret)));
    expect(entries).toEqual(modern.entries);
    const resources = [];
    for (let cursor: string | undefined; ; ) {
      const page = await legacy.listResources(cursor === undefined ? {} : { cursor });
      resources.push(...page.resources);
      cursor = page.nextCursor;
      if (cursor === undefined) break;
    }
    const paginate = resources.find((resource) => resource.name.includes("paginate"));
    expect(paginate).toMatchObject({ mimeType: "text/markdown", uri: expect.stringMatching(/\/SKILL\.md$/) });
    const got = await legacy.request({ method: "skills/get", params: { uri: paginate?.uri } }, GetResult);
    expect(got.skill.frontmatter.name).toBe(paginate?.name);
  });
});
