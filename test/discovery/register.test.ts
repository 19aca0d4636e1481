import { describe, expect, it } from "vitest";
import { writeTransaction } from "../../src/database/transaction.ts";
import { ToolRegistry } from "../../src/discovery/index.ts";
import { WayfindError } from "../../src/errors.ts";
import { LocalWriter, type ReplicatedWrite, type StateWriter } from "../../src/replication/writes.ts";
import { type Catalog, catalogOn, names, openCatalog, seeded, TOOLS } from "./helpers.ts";

/** The WayfindError a registration is rejected with. */
async function thrown(registration: Promise<unknown>): Promise<WayfindError> {
  try {
    await registration;
  } catch (err) {
    if (err instanceof WayfindError) return err;
    throw err;
  }
  throw new Error("expected a WayfindError");
}

const changes = (db: { prepare: (s: string) => { get: () => unknown } }) =>
  (db.prepare("SELECT total_changes() AS n").get() as { n: number }).n;

describe("register", () => {
  it("reports added tools and prefixes the namespace", async () => {
    const { catalog } = openCatalog();
    const result = await catalog.registry.register("test", TOOLS);
    expect(result).toMatchObject({ added: 6, updated: 0, removed: 0, unchanged: 0 });
    expect(result.fingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(catalog.registry.lookup("weather.get_weather", "")[0]?.source).toBe("test");
  });

  it("is a no-op with no writes when nothing changed", async () => {
    const { catalog, db } = await seeded();
    const before = changes(db);
    const first = catalog.registry.fingerprint();
    const result = await catalog.registry.register("test", TOOLS);
    expect(result).toMatchObject({ added: 0, updated: 0, removed: 0, unchanged: 6, fingerprint: first });
    expect(changes(db)).toBe(before);
  });

  it("updates only the changed tool and re-indexes it", async () => {
    const { catalog, db } = await seeded();
    db.exec(`CREATE TEMP TABLE touched (name TEXT);
      CREATE TEMP TRIGGER count_updates AFTER UPDATE ON discovery_tools BEGIN INSERT INTO touched VALUES (new.name); END;
      CREATE TEMP TRIGGER count_inserts AFTER INSERT ON discovery_tools BEGIN INSERT INTO touched VALUES (new.name); END;`);
    const edited = TOOLS.map((t) =>
      t.name === "ping" ? { ...t, description: "Probe the cluster heartbeat" } : t,
    );
    const result = await catalog.registry.register("test", edited);
    expect(result).toMatchObject({ added: 0, updated: 1, unchanged: 5 });
    expect(db.prepare("SELECT name FROM touched").all()).toEqual([{ name: "kubernetes.ping" }]);
    expect(names(catalog.index.search({ query: "heartbeat" }))).toEqual(["kubernetes.ping"]);
    expect(catalog.index.search({ query: "reachable" }).tools).toEqual([]);
  });

  it("changes the fingerprint when an example changes", async () => {
    const { catalog } = await seeded();
    const before = catalog.registry.fingerprint();
    const edited = TOOLS.map((t) =>
      t.name === "get_weather"
        ? { ...t, examples: [{ args: { city: "Rome" }, description: "", tags: [] }] }
        : t,
    );
    expect((await catalog.registry.register("test", edited)).fingerprint).not.toBe(before);
  });

  it("fingerprint does not depend on registration order", async () => {
    const a = openCatalog().catalog;
    const b = openCatalog().catalog;
    await a.registry.register("test", TOOLS);
    await b.registry.register("test", [...TOOLS].reverse());
    expect(a.registry.fingerprint()).toBe(b.registry.fingerprint());
  });

  it("replace_source removes the source's tools missing from the request", async () => {
    const { catalog } = await seeded();
    const result = await catalog.registry.register("test", TOOLS.slice(0, 2), { replaceSource: true });
    expect(result).toMatchObject({ removed: 4, unchanged: 2 });
    expect(catalog.registry.size).toBe(2);
    expect(catalog.index.search({ query: "kubernetes" }).tools).toEqual([]);
  });

  it("without replace_source keeps the source's other tools", async () => {
    const { catalog } = await seeded();
    expect((await catalog.registry.register("test", TOOLS.slice(0, 1))).removed).toBe(0);
    expect(catalog.registry.size).toBe(6);
  });

  it("rejects a name owned by another source as already_exists, naming the tool", async () => {
    const { catalog } = await seeded();
    const err = await thrown(catalog.registry.register("other", [{ name: "ping", namespace: "kubernetes" }]));
    expect(err.code).toBe("already_exists");
    expect(err.message).toContain('"kubernetes.ping"');
    expect(err.message).toContain('"test"');
  });

  const invalid: [string, object[], RegExp][] = [
    ["an empty name", [{ name: "" }], /name is empty/],
    ["an oversize name", [{ name: "x".repeat(129) }], /name must have 1–128 characters, got 129/],
    ["bad characters", [{ name: "bad name!" }], /"bad name!" has characters outside/],
    ["duplicates", [{ name: "a" }, { name: "a" }], /tool "a" appears more than once/],
    [
      "an oversize description",
      [{ name: "a", description: "x".repeat(16_385) }],
      /tool "a": description must have 0–16,384 characters, got 16385/,
    ],
    ["an unknown side effect", [{ name: "a", sideEffects: "mutating" }], /side_effects must be one of/],
  ];
  for (const [what, tools, message] of invalid)
    it(`rejects ${what} as invalid_argument`, async () => {
      const { catalog } = openCatalog();
      const err = await thrown(catalog.registry.register("s", tools as never));
      expect(err.code).toBe("invalid_argument");
      expect(err.message).toMatch(message);
      expect(catalog.registry.size).toBe(0);
    });

  it("lists every invalid tool in the error details and writes nothing", async () => {
    const { catalog } = openCatalog();
    const err = await thrown(catalog.registry.register("s", [{ name: "ok" }, { name: "" }, { name: "a b" }]));
    expect(err.details).toHaveLength(2);
    expect(catalog.registry.size).toBe(0);
  });

  it("rejects an example that does not match the args schema, naming tool, index and field", async () => {
    const { catalog } = openCatalog();
    const err = await thrown(
      catalog.registry.register("s", [
        {
          name: "get_weather",
          argsSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
          examples: [
            { args: { city: "Paris" }, description: "", tags: [] },
            { args: { city: 42 }, description: "", tags: [] },
          ],
        },
      ]),
    );
    expect(err.code).toBe("invalid_argument");
    expect(err.message).toMatch(
      /tool "get_weather": example 1 does not match the args schema at \/city: must be string/,
    );
  });

  it("checks a large schema's examples off the event loop, with the same words and order as inline", async () => {
    // 200 properties: past OFF_THREAD_SCHEMA_VALUES, so the schema worker compiles it.
    const properties = Object.fromEntries(
      Array.from({ length: 200 }, (_, p) => [`p${p}`, { type: "string", maxLength: 5 }]),
    );
    const wide = { type: "object", properties };
    const { catalog } = openCatalog();
    const err = await thrown(
      catalog.registry.register("s", [
        {
          name: "wide_ok",
          argsSchema: wide,
          examples: [{ args: { p0: "fine" }, description: "", tags: [] }],
        },
        { name: "Bad Name", description: "reported first: it comes first in the request" },
        {
          name: "wide_bad",
          argsSchema: wide,
          examples: [{ args: { p7: "too long" }, description: "", tags: [] }],
        },
      ]),
    );
    expect(err.message).toMatch(/Bad Name/);

    const mismatch = await thrown(
      catalog.registry.register("s", [
        {
          name: "wide_bad",
          argsSchema: wide,
          examples: [{ args: { p7: "too long" }, description: "", tags: [] }],
        },
      ]),
    );
    expect(mismatch.message).toMatch(
      /tool "wide_bad": example 0 does not match the args schema at \/p7: must NOT have more than 5 characters/,
    );
    const added = await catalog.registry.register("s", [
      { name: "wide_ok", argsSchema: wide, examples: [{ args: { p0: "fine" }, description: "", tags: [] }] },
    ]);
    expect(added.added).toBe(1);
  });

  it("names a missing required field of an example", async () => {
    const { catalog } = openCatalog();
    const err = await thrown(
      catalog.registry.register("s", [
        {
          name: "t",
          argsSchema: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
          examples: [{ args: {}, description: "", tags: [] }],
        },
      ]),
    );
    expect(err.message).toMatch(/example 0 .* at \/q/);
  });
});

describe("registering between other calls", () => {
  /** Tools whose args schemas Ajv compiles (each has an example): well over one slice of work. */
  const checked = (count: number, description = "Checked tool.") =>
    Array.from({ length: count }, (_, i) => ({
      name: `bulk.tool_${i}`,
      description,
      argsSchema: { type: "object", properties: { q: { type: "string" } } },
      examples: [{ args: { q: `${i}` }, description: "", tags: [] }],
    }));

  it("lets timers run while it checks the tools, and shows none of them until it has committed", async () => {
    const { catalog } = openCatalog();
    let sizeWhileChecking = -1;
    setTimeout(() => {
      sizeWhileChecking = catalog.registry.size;
    }, 0);
    const result = await catalog.registry.register("bulk", checked(2_000));
    expect(sizeWhileChecking).toBe(0);
    expect(result.added).toBe(2_000);
    expect(catalog.registry.size).toBe(2_000);
  });

  it("runs registrations of one source in call order, so the later one wins whole", async () => {
    const { catalog, db } = openCatalog();
    await catalog.registry.register("bulk", checked(1));
    // The first (slow: 2,000 tools to check) changes tool 0; the second (quick) puts it back and drops
    // the rest. Checked side by side, the second would see tool 0 unchanged and the first win.
    const [first, second] = await Promise.all([
      catalog.registry.register("bulk", checked(2_000, "Revised.")),
      catalog.registry.register("bulk", checked(1), { replaceSource: true }),
    ]);
    expect(first).toMatchObject({ added: 1_999, updated: 1 });
    expect(second).toMatchObject({ added: 0, updated: 1, removed: 1_999 });
    expect([...catalog.registry.all()].map((t) => `${t.name}: ${t.description}`)).toEqual([
      "bulk.tool_0: Checked tool.",
    ]);
    expect(catalog.registry.fingerprint()).toBe(second.fingerprint);
    expect(new ToolRegistry(db).fingerprint()).toBe(second.fingerprint);
  });

  it("runs the next registration after one that fails", async () => {
    const { catalog } = openCatalog();
    const [failed, next] = await Promise.allSettled([
      catalog.registry.register("bulk", [...checked(100), { name: "bad name!" }]),
      catalog.registry.register("bulk", checked(1)),
    ]);
    expect(failed.status).toBe("rejected");
    expect(next).toMatchObject({ status: "fulfilled", value: { added: 1 } });
    expect(catalog.registry.size).toBe(1);
  });

  it("answers UNAVAILABLE and writes nothing when the database closes while it checks", async () => {
    const { catalog, db } = openCatalog();
    setTimeout(() => db.close(), 0);
    const err = await thrown(catalog.registry.register("bulk", checked(2_000)));
    expect(err.code).toBe("unavailable");
    expect(catalog.registry.size).toBe(0);
  });
});

describe("persistence", () => {
  it("serves search, get and list after reopening the database, without re-registering", async () => {
    const { db, file, catalog } = await seeded();
    const fingerprint = catalog.registry.fingerprint();
    db.close();
    const reopened = openCatalog({}, file).catalog;
    expect(reopened.registry.size).toBe(6);
    expect(reopened.registry.fingerprint()).toBe(fingerprint);
    expect(names(reopened.index.search({ query: "list kubernetes pods" }))[0]).toBe("kubernetes.list_pods");
    expect(reopened.registry.lookup("weather.get_weather", "")[0]?.examples).toHaveLength(1);
    expect(await reopened.registry.register("test", TOOLS)).toMatchObject({ unchanged: 6, added: 0 });
  });

  it("keeps the tool table in step with a replaced source", async () => {
    const { catalog, db } = await seeded();
    await catalog.registry.register("test", TOOLS.slice(0, 3), { replaceSource: true });
    const rows = db.prepare("SELECT name FROM discovery_tools WHERE name LIKE 'kubernetes.%'").all();
    expect(rows).toEqual([{ name: "kubernetes.list_pods" }]);
  });

  it("a new catalog on the same database sees what another registered", async () => {
    const { db, catalog } = await seeded();
    expect(new ToolRegistry(db).fingerprint()).toBe(catalog.registry.fingerprint());
  });
});

describe("get and list", () => {
  it("get returns full definitions, by name or alias", async () => {
    const { catalog } = openCatalog();
    await catalog.registry.register("s", [
      { name: "Ant_Design.list", aliases: ["Ant Design.list"], description: "d" },
    ]);
    const tool = catalog.registry.lookup("Ant Design.list", "")[0];
    expect(tool).toMatchObject({ name: "Ant_Design.list", description: "d", sideEffects: "external" });
    expect(tool?.argsSchema).toEqual({ type: "object", properties: {} });
  });

  it("list pages through names in order with a token", async () => {
    const { catalog } = await seeded();
    const first = catalog.index.list({ pageSize: 4 });
    expect(first.tools).toHaveLength(4);
    expect(first.totalSize).toBe(6);
    const second = catalog.index.list({ pageSize: 4, pageToken: first.nextPageToken });
    expect(second.nextPageToken).toBe("");
    const all = [...first.tools, ...second.tools].map((t) => t.name);
    expect(all).toEqual([...all].sort());
    expect(new Set(all).size).toBe(6);
  });

  it("list rejects a page size out of range and a foreign token", async () => {
    const { catalog } = await seeded();
    expect(() => catalog.index.list({ pageSize: 0 })).toThrowError(/page_size must be 1–500, got 0/);
    expect(() => catalog.index.list({ pageToken: "garbage" })).toThrowError(/page_token/);
  });
});

describe("owners", () => {
  const tool = (description: string) => ({ name: "refund", namespace: "pay", description });

  it("keeps one tool per owner under the same name and source, each replaced only by its owner", async () => {
    const { catalog } = openCatalog();
    await catalog.registry.register("pay", [tool("Global refunds.")]);
    await catalog.registry.register("pay", [tool("Acme refunds.")], { owner: "acme" });
    expect(
      (await catalog.registry.register("pay", [], { owner: "bravo", replaceSource: true })).removed,
    ).toBe(0);
    expect((await catalog.registry.register("pay", [], { owner: "acme", replaceSource: true })).removed).toBe(
      1,
    );
    expect([...catalog.registry.all()].map((t) => `${t.owner}:${t.description}`)).toEqual([
      ":Global refunds.",
    ]);
  });

  it("gives a tenant its own tool in place of the global one of that name, and others the global one", async () => {
    const { catalog } = openCatalog();
    await catalog.registry.register("pay", [tool("Global refunds.")]);
    await catalog.registry.register("pay", [tool("Acme refunds.")], { owner: "acme" });
    const describe = (tenant: string) =>
      catalog.registry.lookup("pay.refund", tenant).map((t) => t.description);
    expect(describe("acme")).toEqual(["Acme refunds."]);
    expect(describe("bravo")).toEqual(["Global refunds."]);
    expect(describe("")).toEqual(["Global refunds."]);
  });

  it("keeps owners across a restart", async () => {
    const { catalog, db, file } = openCatalog();
    await catalog.registry.register("pay", [tool("Acme refunds.")], { owner: "acme" });
    db.close();
    const reopened = openCatalog({}, file).catalog;
    expect([...reopened.registry.all()].map((t) => t.owner)).toEqual(["acme"]);
    expect(await reopened.registry.register("pay", [tool("Acme refunds.")], { owner: "acme" })).toMatchObject(
      {
        unchanged: 1,
      },
    );
  });

  it("fingerprints each owner's tools on their own, unmoved by another owner's registration", async () => {
    const { catalog } = openCatalog();
    const acme = (await catalog.registry.register("pay", [tool("Acme refunds.")], { owner: "acme" }))
      .fingerprint;
    await catalog.registry.register("pay", [tool("Bravo refunds.")], { owner: "bravo" });
    expect(catalog.registry.fingerprint("acme")).toBe(acme);
  });
});

describe("ToolRegistry.registerWrite (as replicas apply it)", () => {
  it("applies registrations of one source that arrive in one page as if they came one by one", async () => {
    // The writer's changes, as the change log carries them (JSON), applied by another catalog.
    const log: { write: ReplicatedWrite<unknown, unknown>; payload: unknown }[] = [];
    const recording: StateWriter = {
      async write(write, payload) {
        log.push({
          write: write as ReplicatedWrite<unknown, unknown>,
          payload: JSON.parse(JSON.stringify(payload)),
        });
        return writer.write(write, payload);
      },
      fence: async () => true,
    };
    const origin = openCatalog();
    const writer = new LocalWriter(origin.db);
    const catalog = catalogOn(origin.db, { writer: recording });
    const tool = (name: string, description: string) => ({ name, namespace: "raced", description });
    await catalog.registry.register(
      "raced",
      [tool("shared", "First version."), tool("only_a", "Only in the first.")],
      {
        replaceSource: true,
      },
    );
    await catalog.registry.register(
      "raced",
      [tool("shared", "Second version."), tool("only_b", "Only in the second.")],
      {
        replaceSource: true,
      },
    );
    expect(log).toHaveLength(2);

    const replica = openCatalog();
    writeTransaction(replica.db, () => {
      for (const { payload } of log)
        replica.catalog.registry.registerWrite.apply(payload as never, { atMs: 0 });
    });
    const listed = (c: Catalog) =>
      c.index.list({ pageSize: 50 }).tools.map((t) => `${t.name}: ${t.description}`);
    expect(listed(replica.catalog)).toEqual([
      "raced.only_b: Only in the second.",
      "raced.shared: Second version.",
    ]);
    expect(listed(replica.catalog)).toEqual(listed(catalog));
  });
});
