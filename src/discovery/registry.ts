/** The registered tools (ToolRegistry): SQLite rows, their copy in memory, the version builds follow. */

import { createHash, randomUUID } from "node:crypto";
import { setImmediate as nextTurn } from "node:timers/promises";
import type { Db } from "../database/sqlite.ts";
import { afterCommit } from "../database/transaction.ts";
import { type FieldViolation, invalidArgument, quoteInput, WayfindError } from "../errors.ts";
import { LocalWriter, type ReplicatedWrite, type StateWriter } from "../replication/writes.ts";
import { runInSlices } from "../slices.ts";
import { inSpan } from "../telemetry.ts";
import { checkLargeExamples } from "./schema-checks.ts";
import { toolKey } from "./search-index.ts";
import {
  type RegisterOptions,
  type RegisterResult,
  type Tool,
  type ToolInput,
  toolExistsFor,
} from "./types.ts";
import {
  type ExamplesCheck,
  fullName,
  recordSteps,
  sha256,
  LIMITS as TOOL_LIMITS,
  type ToolRecord,
  toolLabel,
} from "./validate.ts";

const SOURCE_PATTERN = /^[A-Za-z0-9_][A-Za-z0-9_.:/@-]{0,127}$/;

/** The registered tools of one version (ToolRegistry.snapshot). */
export interface ToolsSnapshot {
  readonly tools: readonly Tool[];
  /** Each tool's position in `tools`. */
  readonly placeOf: ReadonlyMap<Tool, number>;
}

export interface RegistryOptions {
  /** Old tool name → current name (config `aliases`); tried before the tools' own aliases. */
  readonly aliases?: Readonly<Record<string, string>>;
  /** How registrations are written: the server's (shared by replicas); default this database alone. */
  readonly writer?: StateWriter;
}

interface Row {
  name: string;
  source: string;
  owner: string;
  definition: string;
}

/**
 * The registered tools: registration (transactional, hash-diffed) of the tool rows in SQLite, their
 * in-memory copy by owner and name, aliases, fingerprints, and lookups by name. Each change that
 * commits moves `version` on; the index host (index-host.ts) reads that number and the tools to
 * know which build of the search index is current, so nothing here knows an index exists.
 */
export class ToolRegistry {
  /** By toolKey(owner, name). */
  private readonly tools = new Map<string, Tool>();
  /** Name → the tenants that registered a tool of that name (global tools are keyed by name alone). */
  private readonly tenantsByName = new Map<string, Set<string>>();
  /** Alias → owner → canonical name, first registration per owner wins. */
  private readonly aliases = new Map<string, Map<string, string>>();
  /** sha1 of the raw input last accepted per tool key (memory only; a restart just takes the slow path once). */
  private readonly inputDigests = new Map<string, string>();
  /** How many changes have committed: the version index builds and their readers refer to. */
  private changes = 0;
  /** Settled at the next change (see changed), then replaced. */
  private nextChange = signal();
  /** The snapshot of the current version, made on first ask after a change. */
  private snapshotAt: (ToolsSnapshot & { readonly version: number }) | undefined;
  /** Fingerprints by owner, computed on first ask after a change. */
  private readonly fingerprints = new Map<string, string>();
  /** Config aliases: old name → current name. */
  private readonly renamed: ReadonlyMap<string, string>;
  /** The registration under way and those queued behind it (see register). */
  private registrations: Promise<unknown> = Promise.resolve();
  private readonly writer: StateWriter;
  /**
   * The in-memory tools of this process's registrations being written, by change id: applying its own
   * change, the registry takes them instead of parsing the rows again (another replica parses them).
   */
  private readonly builtTools = new Map<string, readonly Tool[]>();

  constructor(
    private readonly db: Db,
    options: RegistryOptions = {},
  ) {
    this.renamed = new Map(Object.entries(options.aliases ?? {}));
    this.writer = options.writer ?? new LocalWriter(db);
    for (const row of db
      .prepare<[], Row>("SELECT name, source, owner, definition FROM discovery_tools")
      .all()) {
      const record = JSON.parse(row.definition) as ToolRecord;
      this.put({ ...record, source: row.source, owner: row.owner });
    }
  }

  get size(): number {
    return this.tools.size;
  }

  /** How many changes have committed since this process loaded the rows. */
  get version(): number {
    return this.changes;
  }

  /**
   * Settles at the next change: the cue of whoever keeps something derived (the index host) to
   * compare `version` again. A value to await, so the registry calls no one back.
   */
  changed(): Promise<void> {
    return this.nextChange.promise;
  }

  /** Every registered tool, unfiltered: callers apply their access control (rendering, gating). */
  all(): Iterable<Tool> {
    return this.tools.values();
  }

  /**
   * Every registered tool as one value per version, in the order of all(), and each one's place in
   * it: what the caller's access verdicts are worked out over, once per caller and version.
   */
  snapshot(): ToolsSnapshot {
    if (this.snapshotAt?.version !== this.changes) {
      const tools = [...this.tools.values()];
      this.snapshotAt = { version: this.changes, tools, placeOf: new Map(tools.map((tool, i) => [tool, i])) };
    }
    return this.snapshotAt;
  }

  /**
   * sha256 over the sorted (name, hash) pairs of one owner's tools (default: the global ones), so a
   * tenant's fingerprint never moves with another tenant's registrations.
   */
  fingerprint(owner = ""): string {
    let fingerprint = this.fingerprints.get(owner);
    if (fingerprint === undefined) {
      fingerprint = fingerprintOf([...this.tools.values()].filter((t) => t.owner === owner));
      this.fingerprints.set(owner, fingerprint);
    }
    return fingerprint;
  }

  /** The same over one source's tools (e.g. one catalog file): what the log's `catalog loaded` line shows. */
  sourceFingerprint(source: string, owner = ""): string {
    return fingerprintOf([...this.tools.values()].filter((t) => t.owner === owner && t.source === source));
  }

  /**
   * Whether `tool` exists for `tenant`: its own, or a global one it has not shadowed with a tool of
   * the same name. Other tenants' tools do not exist for it (the caller's access control applies on
   * top). A tenant-less caller has the global tools.
   */
  existsFor(tenant: string, tool: Tool): boolean {
    return toolExistsFor(tool.owner, tenant, () => this.tenantsByName.get(tool.name)?.has(tenant) === true);
  }

  /**
   * Upserts one source's tools in one transaction; unchanged input writes nothing. Sources and names
   * are per owner: nothing here reads or reports another owner's tools, so a tenant learns nothing
   * about names others registered.
   *
   * Checking the tools is a second or more of work for 5,000 tools with examples, so it runs in
   * slices of about 10 ms between other calls; the write is one synchronous transaction after it, and
   * memory changes only once that has committed. Registrations run one at a time, in call order:
   * two of the same source checked side by side would each diff against the state before either
   * wrote, and one update would be lost. One queue for the whole catalog (not one per source) also
   * keeps registrations from each taking a slice of the same turn.
   */
  register(
    source: string,
    inputs: readonly ToolInput[],
    options: RegisterOptions = {},
  ): Promise<RegisterResult> {
    const registration = this.registrations.then(() => this.registerNext(source, inputs, options));
    // The next registration waits for this one to end, whether or not it succeeds.
    this.registrations = registration.catch(() => undefined);
    return registration;
  }

  /**
   * What a registration will write, worked out in steps of one tool or less (runInSlices spreads them
   * over turns of the event loop). Reads the catalog and changes nothing: registrations are queued,
   * so what it read still holds when the write follows.
   */
  private *prepareRegistration(
    owner: string,
    source: string,
    inputs: readonly ToolInput[],
    replaceSource: boolean,
    examplesChecked: ReadonlyMap<number, ExamplesCheck>,
  ): Generator<void, PreparedRegistration> {
    const problems: FieldViolation[] = [];
    const records: ToolRecord[] = [];
    const seen = new Set<string>();
    const digests = new Map<string, string>();
    const kept: [string, string][] = [];
    for (const [i, input] of inputs.entries()) {
      yield;
      try {
        // Fast path: byte-identical input to what this source registered before cannot differ.
        const digest = createHash("sha1").update(JSON.stringify(input)).digest("base64");
        const known =
          typeof input.name === "string" ? this.tools.get(toolKey(owner, fullName(input))) : undefined;
        if (
          known &&
          known.source === source &&
          this.inputDigests.get(toolKey(owner, known.name)) === digest
        ) {
          if (seen.has(known.name))
            problems.push({
              field: `tools[${i}].name`,
              description: `tool "${known.name}" appears more than once in the request`,
            });
          seen.add(known.name);
          kept.push([known.name, known.hash]);
          continue;
        }
        const record = yield* recordSteps(input, i, examplesChecked.get(i));
        digests.set(record.name, digest);
        if (seen.has(record.name))
          problems.push({
            field: `tools[${i}].name`,
            description: `tool "${record.name}" appears more than once in the request`,
          });
        seen.add(record.name);
        records.push(record);
      } catch (err) {
        // Anything else (a RangeError from a deeply nested input, say) is still the caller's tool.
        problems.push({
          field: `tools[${i}]`,
          description:
            err instanceof WayfindError
              ? err.message
              : `${toolLabel(input, i)}: could not be read: ${(err as Error).message}`,
        });
      }
    }
    const first = problems[0]?.description;
    if (first !== undefined)
      throw invalidArgument(
        problems.length === 1 ? first : `${problems.length} invalid tools: ${first}`,
        problems,
      );
    for (const r of records) {
      const registeredBy = this.tools.get(toolKey(owner, r.name))?.source;
      if (registeredBy !== undefined && registeredBy !== source)
        throw new WayfindError("already_exists", registeredElsewhere(r.name, registeredBy));
    }
    const added: ToolRecord[] = [];
    const updated: ToolRecord[] = [];
    for (const r of records) {
      const existing = this.tools.get(toolKey(owner, r.name));
      if (!existing) added.push(r);
      else if (existing.hash !== r.hash) updated.push(r);
      else kept.push([r.name, r.hash]);
    }
    const removed = replaceSource
      ? [...this.tools.values()]
          .filter((t) => t.owner === owner && t.source === source && !seen.has(t.name))
          .map((t) => t.name)
      : [];
    // The rows and the in-memory tools too (microseconds a tool), so the turn that commits only
    // writes them.
    const rows = {
      added: yield* rowsOf(added, source, owner),
      updated: yield* rowsOf(updated, source, owner),
    };
    const changed: Tool[] = [];
    for (const r of [...added, ...updated]) {
      yield;
      changed.push({ ...r, source, owner });
    }
    return { added, updated, removed, rows, changed, digests, kept };
  }

  /** One registration, its turn come (see register). */
  private async registerNext(
    source: string,
    inputs: readonly ToolInput[],
    options: RegisterOptions,
  ): Promise<RegisterResult> {
    const owner = options.owner ?? "";
    if (typeof source !== "string" || !SOURCE_PATTERN.test(source))
      throw invalidArgument(`source ${quoteInput(source)} must be 1-128 characters of [A-Za-z0-9_.:/@-]`);
    if (inputs.length > TOOL_LIMITS.toolsPerSource)
      throw invalidArgument(
        `${inputs.length} tools in one source; the limit is ${TOOL_LIMITS.toolsPerSource}`,
      );
    // Large args schemas compile in the schema worker first: one compile would be one long step here.
    const examplesChecked = await checkLargeExamples(inputs);
    const prepared = await runInSlices(
      this.prepareRegistration(owner, source, inputs, options.replaceSource ?? false, examplesChecked),
      () => this.db.open,
    );
    if (!prepared) throw closedWhileChecking();
    const { added, updated, removed, rows, changed, digests, kept } = prepared;
    let written = { added: 0, updated: 0, removed: 0 };
    if (added.length + updated.length + removed.length > 0) {
      // The commit gets a turn of its own (a large registration's is long); the last checking slice ran in this one.
      await nextTurn();
      if (!this.db.open) throw closedWhileChecking();
      const change: RegistrationChange = {
        id: randomUUID(),
        owner,
        source,
        replaceSource: options.replaceSource ?? false,
        kept,
        rows: [...rows.added, ...rows.updated].map(({ name, hash, definition }) => ({
          name,
          hash,
          definition,
        })),
      };
      this.builtTools.set(change.id, changed);
      try {
        written = await this.writer.write(this.registerWrite, change, owner);
      } finally {
        this.builtTools.delete(change.id);
      }
      // The fingerprint sorts every tool of the owner: not in the commit's turn either.
      await nextTurn();
    }
    for (const [name, digest] of digests) this.inputDigests.set(toolKey(owner, name), digest);
    return {
      ...written,
      unchanged: kept.length + added.length + updated.length - written.added - written.updated,
      fingerprint: this.fingerprint(owner),
    };
  }

  /**
   * Writes a checked registration: its rows in the transaction, the in-memory tools once it commits.
   * Every replica applies it to its own copy in log order, so what the registrant checked may have
   * changed meanwhile: a tool now owned by another source refuses it as at check time, and a tool it
   * found unchanged that has changed since aborts it (a retry checks it again), so a registration
   * never silently keeps another's version of its own tools.
   */
  readonly registerWrite: ReplicatedWrite<
    RegistrationChange,
    { added: number; updated: number; removed: number }
  > = {
    kind: "discovery/register",
    apply: (change) => {
      const { owner, source } = change;
      // The rows, not the in-memory tools: those change only once the page of changes being applied
      // commits, and an earlier change of the same page may have written this source.
      const current = new Map(
        this.db
          .prepare<[string, string], { name: string; hash: string }>(
            "SELECT name, hash FROM discovery_tools WHERE owner = ? AND source = ?",
          )
          .all(owner, source)
          .map((row) => [row.name, row.hash]),
      );
      for (const [name, hash] of change.kept) {
        if (current.get(name) !== hash)
          throw new WayfindError(
            "aborted",
            `tool "${name}" of source "${source}" changed while this registration was checked; send it again`,
          );
      }
      const arriving = change.rows.filter((row) => !current.has(row.name)).map((row) => row.name);
      // One query for every new name: a point query each would lengthen the commit's turn with the count.
      const elsewhere = new Map(
        arriving.length === 0
          ? []
          : this.db
              .prepare<[string, string], { name: string; source: string }>(
                "SELECT name, source FROM discovery_tools WHERE owner = ? AND name IN (SELECT value FROM json_each(?))",
              )
              .all(owner, JSON.stringify(arriving))
              .map((row) => [row.name, row.source]),
      );
      for (const name of arriving) {
        const other = elsewhere.get(name);
        if (other !== undefined) throw new WayfindError("already_exists", registeredElsewhere(name, other));
      }
      const added = arriving.length;
      const updated = change.rows.filter((row) => {
        const hash = current.get(row.name);
        return hash !== undefined && hash !== row.hash;
      }).length;
      const staying = new Set([...change.kept.map(([name]) => name), ...change.rows.map((row) => row.name)]);
      const removed = change.replaceSource ? [...current.keys()].filter((name) => !staying.has(name)) : [];
      // Positional parameters: binding named ones from an object per row doubled the commit's turn.
      const insert = this.db.prepare<[string, string, string, string, string]>(
        `INSERT INTO discovery_tools (owner, name, source, hash, definition) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (owner, name) DO UPDATE SET hash = excluded.hash, definition = excluded.definition`,
      );
      const remove = this.db.prepare("DELETE FROM discovery_tools WHERE owner = ? AND name = ?");
      const counts = { added, updated, removed: removed.length };
      inSpan("wayfind.register_tools.write", { "wayfind.source": source, ...counts }, () => {
        for (const row of change.rows) insert.run(owner, row.name, source, row.hash, row.definition);
        for (const name of removed) remove.run(owner, name);
      });
      const built = this.builtTools.get(change.id);
      afterCommit(this.db, () => {
        for (const name of removed) this.drop(owner, name);
        change.rows.forEach((row, i) => {
          const key = toolKey(owner, row.name);
          // Whatever input this process accepted for the tool before, it is not what the tool holds now.
          this.inputDigests.delete(key);
          this.put(built?.[i] ?? { ...(JSON.parse(row.definition) as ToolRecord), source, owner });
        });
        this.changes++;
        this.fingerprints.clear();
        this.nextChange.settle();
        this.nextChange = signal();
      });
      return counts;
    },
  };

  /** The current name of a tool the configuration renamed (config `aliases`), else `name` itself. */
  canonicalName(name: string): string {
    return this.renamed.get(name) ?? name;
  }

  /**
   * The tools `asked` may name for `tenant`, in the order a lookup tries them (the first the caller's
   * access admits is the one meant): a renamed name (config `aliases`) is read as the current name;
   * then the tool of that name, then those whose own aliases hold it. Read on the tool map, which is
   * current the moment a registration commits: a lookup never waits for an index build.
   */
  lookup(asked: string, tenant: string): Tool[] {
    const requested = this.canonicalName(asked);
    const found: Tool[] = [];
    const consider = (tool: Tool | undefined) => {
      if (tool !== undefined && this.existsFor(tenant, tool)) found.push(tool);
    };
    // The global tool, then each tenant's of that name: at most one of them exists for the tenant.
    const global = this.tools.get(requested);
    if (global?.owner === "") consider(global);
    for (const owner of this.tenantsByName.get(requested) ?? [])
      consider(this.tools.get(toolKey(owner, requested)));
    for (const [owner, name] of this.aliases.get(requested) ?? [])
      consider(this.tools.get(toolKey(owner, name)));
    return found;
  }

  private put(tool: Tool): void {
    const key = toolKey(tool.owner, tool.name);
    const old = this.tools.get(key);
    if (old) this.forgetAliases(old);
    this.tools.set(key, tool);
    if (tool.owner !== "") {
      let tenants = this.tenantsByName.get(tool.name);
      if (!tenants) {
        tenants = new Set();
        this.tenantsByName.set(tool.name, tenants);
      }
      tenants.add(tool.owner);
    }
    for (const a of tool.aliases) {
      let byOwner = this.aliases.get(a);
      if (!byOwner) {
        byOwner = new Map();
        this.aliases.set(a, byOwner);
      }
      if (!byOwner.has(tool.owner) && !this.tools.has(toolKey(tool.owner, a)))
        byOwner.set(tool.owner, tool.name);
    }
  }

  private drop(owner: string, name: string): void {
    const key = toolKey(owner, name);
    const old = this.tools.get(key);
    if (!old) return;
    this.forgetAliases(old);
    this.tools.delete(key);
    const tenants = this.tenantsByName.get(name);
    tenants?.delete(owner);
    if (tenants?.size === 0) this.tenantsByName.delete(name);
    this.inputDigests.delete(key);
  }

  private forgetAliases(tool: Tool): void {
    for (const a of tool.aliases) {
      const byOwner = this.aliases.get(a);
      if (byOwner?.get(tool.owner) !== tool.name) continue;
      byOwner.delete(tool.owner);
      if (byOwner.size === 0) this.aliases.delete(a);
    }
  }

  /** Names of the tools `alias` is an alias of (one per owner). */
  aliasTargets(alias: string): string[] {
    return [...(this.aliases.get(alias)?.values() ?? [])];
  }
}

function toRow(
  r: ToolRecord,
  source: string,
  owner: string,
): { name: string; source: string; owner: string; hash: string; definition: string } {
  return { name: r.name, source, owner, hash: r.hash, definition: JSON.stringify(r) };
}

/** A discovery_tools row as toRow makes it (named parameters of the INSERT and UPDATE). */
type ToolRow = ReturnType<typeof toRow>;

/** What one registration writes (see ToolRegistry.prepareRegistration). */
interface PreparedRegistration {
  readonly added: readonly ToolRecord[];
  readonly updated: readonly ToolRecord[];
  /** Names of the source's tools that replace_source drops. */
  readonly removed: readonly string[];
  readonly rows: { readonly added: readonly ToolRow[]; readonly updated: readonly ToolRow[] };
  /** The added and updated tools as the registry holds them in memory. */
  readonly changed: readonly Tool[];
  /** Digest of each checked tool's raw input, by name: the next registration's fast path. */
  readonly digests: ReadonlyMap<string, string>;
  /** Tools found unchanged, with the hash they had: the write checks they still have it. */
  readonly kept: readonly [string, string][];
}

/** A checked registration, as every replica applies it (see ToolRegistry.registerWrite). */
type RegistrationChange = {
  /** Ties the change to the in-memory tools this process built for it (builtTools). */
  readonly id: string;
  readonly owner: string;
  readonly source: string;
  readonly replaceSource: boolean;
  /** Tools of the request found unchanged: [name, hash]. */
  readonly kept: readonly [string, string][];
  /** Tools added or updated: their discovery_tools rows. */
  readonly rows: readonly { readonly name: string; readonly hash: string; readonly definition: string }[];
};

/** Why a registration may not take a tool another source of the same owner registered. */
function registeredElsewhere(name: string, source: string): string {
  return `tool "${name}" is already registered by source "${source}"; rename it or register it from that source`;
}

const closedWhileChecking = () =>
  new WayfindError("unavailable", "the server closed its catalog while checking the tools; retry");

/** The rows of `records`, one step each. */
function* rowsOf(records: readonly ToolRecord[], source: string, owner: string): Generator<void, ToolRow[]> {
  const rows: ToolRow[] = [];
  for (const r of records) {
    yield;
    rows.push(toRow(r, source, owner));
  }
  return rows;
}

/** sha256 over the sorted (name, hash) pairs of `tools`. */
function fingerprintOf(tools: readonly Tool[]): string {
  return sha256(
    tools
      .map((t) => `${t.name}\t${t.hash}\n`)
      .sort()
      .join(""),
  );
}

/** A promise and the function that settles it. */
function signal(): { promise: Promise<void>; settle: () => void } {
  let settle = () => {};
  const promise = new Promise<void>((resolve) => {
    settle = resolve;
  });
  return { promise, settle };
}
