#!/usr/bin/env node
// The demo's MCP server (stdio): the workspace tools of demo/wayfind.yaml over the files of
// demo/workspace, so a tool found through wayfind can be called through it too (over /mcp, the
// `tool_call` meta tool or CallTool). Reads stay inside the workspace folder; writes are kept in this
// process's memory, never on disk.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "workspace");
/** Larger files are not read whole: a tool answer is read by a model. */
const MAX_FILE_BYTES = 64 * 1024;
const MAX_MATCHES = 50;
/** Files written during this process's life (path relative to the workspace → content). */
const written = new Map();

/** The workspace-relative form of `path`, or an error when it leaves the workspace. */
function inWorkspace(path) {
  const absolute = resolve(ROOT, path);
  if (absolute !== ROOT && !absolute.startsWith(ROOT + sep))
    throw new Error(`${JSON.stringify(path)} is outside the workspace: paths are relative to its root`);
  return relative(ROOT, absolute).split(sep).join("/");
}

function readText(path) {
  const at = inWorkspace(path);
  if (written.has(at)) return written.get(at);
  const file = join(ROOT, at);
  const stat = statSync(file, { throwIfNoEntry: false });
  if (!stat?.isFile()) throw new Error(`no file ${JSON.stringify(path)} in the workspace`);
  if (stat.size > MAX_FILE_BYTES) throw new Error(`${path} is larger than ${MAX_FILE_BYTES} bytes`);
  return readFileSync(file, "utf8");
}

/** Every file of the workspace (on disk and written), relative, sorted. */
function allFiles() {
  const found = new Set(written.keys());
  const walk = (dir) => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const path = dir === "" ? entry.name : `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile()) found.add(path);
    }
  };
  walk("");
  return [...found].sort();
}

const text = (value) => ({ content: [{ type: "text", text: value }] });
const failed = (error) => ({ content: [{ type: "text", text: error.message }], isError: true });
const tool = (run) => async (args) => {
  try {
    return text(await run(args));
  } catch (error) {
    return failed(error);
  }
};

const server = new McpServer({ name: "wayfind-demo-workspace", version: "1.0.0" });

server.registerTool(
  "read_file",
  {
    description: "Read a UTF-8 text file from the workspace.",
    inputSchema: { path: z.string().describe("Path relative to the workspace root") },
    annotations: { readOnlyHint: true },
  },
  tool(({ path }) => readText(path)),
);

server.registerTool(
  "write_file",
  {
    description: "Create or overwrite a text file in the workspace.",
    inputSchema: {
      path: z.string().describe("Path relative to the workspace root"),
      content: z.string().max(MAX_FILE_BYTES).describe("Full new content"),
    },
  },
  tool(({ path, content }) => {
    const at = inWorkspace(path);
    written.set(at, content);
    return `wrote ${content.length} characters to ${at} (the demo keeps written files in memory)`;
  }),
);

server.registerTool(
  "list_directory",
  {
    description: "List files and folders of a workspace directory.",
    inputSchema: { path: z.string().describe("Directory path; '.' for the root") },
    annotations: { readOnlyHint: true },
  },
  tool(({ path }) => {
    const at = inWorkspace(path);
    const prefix = at === "" ? "" : `${at}/`;
    const entries = new Set();
    for (const file of allFiles()) {
      if (!file.startsWith(prefix)) continue;
      const rest = file.slice(prefix.length);
      entries.add(rest.includes("/") ? `${rest.slice(0, rest.indexOf("/"))}/` : rest);
    }
    if (entries.size === 0) throw new Error(`no directory ${JSON.stringify(path)} in the workspace`);
    return [...entries].join("\n");
  }),
);

server.registerTool(
  "search_files",
  {
    description: "Find the lines of workspace files that contain a text (case-insensitive).",
    inputSchema: { text: z.string().min(1).max(200).describe("Text to look for") },
    annotations: { readOnlyHint: true },
  },
  tool(({ text: wanted }) => {
    const needle = wanted.toLowerCase();
    const matches = [];
    for (const file of allFiles()) {
      let lines;
      try {
        lines = readText(file).split("\n");
      } catch {
        continue; // too large to read: not searched
      }
      for (const [index, line] of lines.entries())
        if (line.toLowerCase().includes(needle) && matches.length < MAX_MATCHES)
          matches.push(`${file}:${index + 1}: ${line.trim()}`);
    }
    return matches.length > 0 ? matches.join("\n") : `no line contains ${JSON.stringify(wanted)}`;
  }),
);

await server.connect(new StdioServerTransport());
