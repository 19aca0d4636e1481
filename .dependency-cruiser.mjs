// Import rules for src/ (`npm run depcruise`, a step of scripts/test.sh): no circular imports, type-only
// ones included, and no import from a higher layer into a lower one.
//
// The layers, from the top down, as the code stands (each folder or file of src/ is in exactly one; a
// layer may import from itself and from any layer below it):
const LAYERS = [
  {
    name: "entry",
    why: "the processes and their transports: the CLI and the server that wire everything below",
    folders: ["cli", "server"],
    files: [],
  },
  {
    // semantic ranks both catalogs (discovery's tools, skills' skills) and access filters discovery's
    // tools by the config's rules: both sit above the domain and config, beside the other features.
    name: "features",
    why: "what a request does with the catalogs: tools, skills (skill-service), activation, prompt, payloads, sources, auth, access, semantic search, the discovery tools, learning from use, the MCP endpoint, the API's enum maps",
    folders: [
      "tools",
      "skill-service",
      "activation",
      "prompt",
      "payload",
      "sources",
      "auth",
      "access",
      "semantic",
      "discovery-tools",
      "learning",
      "mcp-endpoint",
      // The proto ↔ domain enum maps: the server's handlers and the MCP endpoint's meta tools share them.
      "api-enums",
    ],
    files: [],
  },
  {
    // Config is typed from what the layers below need (e.g. replication's PostgresConfig, usage's
    // prices, skills' defaults): they never read config, the features above do.
    name: "config",
    why: "the settings file and its defaults",
    folders: ["config"],
    files: [],
  },
  {
    // discovery is a peer of skills and usage, not below them: like them it writes through
    // replication's StateWriter and emits events.
    name: "domain",
    why: "the tool catalog, the skills library and the usage ledger, each with its own store",
    folders: ["discovery", "skills", "usage"],
    files: [],
  },
  {
    // The one search engine under both catalogs: analysis, request reading, BM25F. It knows documents
    // and their fields, never tools or skills, so every search improvement lands once, for both.
    name: "search",
    why: "the search core: text analysis (typos, synonyms, the dictionary, model words), request reading, the BM25F ranker over weighted fields, match scores and the literal index behind regex and exact search",
    folders: ["search"],
    files: [],
  },
  {
    name: "state",
    why: "how the domain's writes are logged and shared: the event log and replication",
    folders: ["events", "replication"],
    files: [],
  },
  {
    name: "foundations",
    why: "libraries with no knowledge of the domain: text, SQLite, the caller's identity, JSON, errors, limits, caches, rate limits, workers, work in slices, closing what a start opened, telemetry, HTTP responses",
    folders: ["text", "database", "caller"],
    files: [
      "json.ts",
      "errors.ts",
      "limits.ts",
      "lru.ts",
      "token-bucket.ts",
      "checkout.ts",
      "telemetry.ts",
      "worker-entry.ts",
      "worker-jobs.ts",
      "http-response.ts",
      "slices.ts",
      "closers.ts",
    ],
    // gen/ is generated from proto/ (buf generate) and imports only @bufbuild: a foundation.
    outside: ["^gen/"],
  },
];

const literal = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const pathsOf = (layer) => [
  ...layer.folders.map((folder) => `^src/${literal(folder)}/`),
  ...layer.files.map((file) => `^src/${literal(file)}$`),
  ...(layer.outside ?? []),
];

/** @type {import("dependency-cruiser").IConfiguration} */
export default {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment:
        "Modules that import each other, type-only imports included: move what both need into a module below both.",
      from: {},
      to: { circular: true },
    },
    ...LAYERS.slice(1).map((layer, i) => {
      const higher = LAYERS.slice(0, i + 1);
      return {
        name: `layer-${layer.name}`,
        severity: "error",
        comment: `The ${layer.name} layer (${layer.why}) imports nothing from a higher layer (${higher.map((h) => h.name).join(", ")}): move what both need down, or turn the dependency around.`,
        from: { path: pathsOf(layer) },
        to: { path: higher.flatMap(pathsOf) },
      };
    }),
    {
      name: "in-a-layer",
      severity: "error",
      comment:
        "Every folder and file of src/ belongs to one layer: add it to LAYERS in .dependency-cruiser.mjs.",
      from: { path: "^src/", pathNot: LAYERS.flatMap(pathsOf) },
      to: {},
    },
  ],
  options: {
    doNotFollow: { path: ["node_modules"] },
    // Type-only imports are dependencies too: a cycle through them is still a cycle.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      mainFields: ["module", "main", "types", "typings"],
    },
    reporterOptions: {
      text: { highlightFocused: true },
    },
  },
};
