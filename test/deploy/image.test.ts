import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * The container image (Dockerfile; `npm run image` builds it) run as a cluster runs it: a read-only
 * root file system, its configuration mounted and named by the environment, its data on a volume.
 * Needs podman and the image (scripts/test.sh builds it first where podman is installed); without
 * them the suite is skipped, saying so.
 */

const ROOT = join(import.meta.dirname, "..", "..");
const IMAGE = process.env.WAYFIND_IMAGE ?? "localhost/wayfind:latest";
const NAME = `wayfind-smoke-${process.pid}`;

/** podman with this machine's settings (scripts/podman.sh). */
function podman(...args: string[]) {
  const run = spawnSync("bash", [join(ROOT, "scripts", "podman.sh"), ...args], { encoding: "utf8" });
  return { status: run.status, stdout: run.stdout.trim(), stderr: run.stderr };
}

function whyNotRunnable(): string | undefined {
  if (spawnSync(process.env.WAYFIND_PODMAN ?? "podman", ["--version"]).status !== 0)
    return "podman is not installed (apt-get install podman runc)";
  if (podman("image", "exists", IMAGE).status !== 0) return `no image ${IMAGE}: npm run image builds it`;
  return undefined;
}
const missing = whyNotRunnable();
const SUITE = missing ? `the container image (skipped: ${missing})` : "the container image";

/** The demo's catalog, as a mounted config names it (its paths inside the image). */
const CONFIG = `catalogs:
  - {path: /opt/wayfind/demo/catalogs/github.jsonl, namespace: github}
  - {path: /opt/wayfind/demo/catalogs/productivity.jsonl}
skill_packs:
  - {name: demo, path: /opt/wayfind/demo/skills/, scope_mode: global}
`;

let baseUrl = "";
let startedAt = 0;

async function readiness(): Promise<{ status: string; checks: Record<string, unknown> } | undefined> {
  try {
    return (await (await fetch(`${baseUrl}/readyz`)).json()) as {
      status: string;
      checks: Record<string, unknown>;
    };
  } catch {
    return undefined; // not listening yet
  }
}

describe.skipIf(missing)(SUITE, () => {
  beforeAll(() => {
    const config = join(mkdtempSync(join(tmpdir(), "wayfind-image-")), "wayfind.yaml");
    writeFileSync(config, CONFIG);
    startedAt = performance.now();
    const run = podman(
      "run",
      "--detach",
      "--name",
      NAME,
      "--read-only",
      "--publish",
      "127.0.0.1::50051",
      "--volume",
      `${config}:/etc/wayfind/wayfind.yaml:ro`,
      "--env",
      "WAYFIND_CONFIG=/etc/wayfind/wayfind.yaml",
      IMAGE,
    );
    expect(run.status, run.stderr).toBe(0);
    const port = podman("port", NAME, "50051").stdout.split(":").pop();
    baseUrl = `http://127.0.0.1:${port}`;
  });
  afterAll(() => {
    podman("rm", "--force", "--volumes", NAME);
  });

  it("is ready, hybrid search included, within 10 s of its start", async () => {
    let ready = await readiness();
    while (ready?.checks.semantic !== "ready" && performance.now() - startedAt < 30_000) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      ready = await readiness();
    }
    const seconds = (performance.now() - startedAt) / 1000;
    expect(ready, podman("logs", NAME).stdout.slice(-2_000)).toMatchObject({
      status: "ready",
      checks: { semantic: "ready", semantic_pending: 0 },
    });
    expect(seconds).toBeLessThan(10);
  }, 40_000);

  it("runs as a non-root user, with its data on the volume", () => {
    expect(podman("exec", NAME, "sh", "-c", "stat -c %u /proc/1").stdout).toBe("10001");
    expect(podman("exec", NAME, "sh", "-c", "ls /var/lib/wayfind").stdout).toContain("wayfind.db");
  });

  it("runs the compiled server alone: no TypeScript sources in the image", () => {
    const listed = podman("exec", NAME, "sh", "-c", "ls /opt/wayfind; ls /opt/wayfind/dist/src/cli");
    expect(listed.stdout.split("\n")).toEqual(expect.arrayContaining(["dist", "bin", "models", "main.js"]));
    expect(listed.stdout.split("\n")).not.toContain("src");
    expect(listed.stdout).not.toContain("tsconfig");
  });

  it("passes its own health check", () => {
    const check = podman("healthcheck", "run", NAME);
    expect(check.status, check.stdout + check.stderr).toBe(0);
  });

  it("serves the mounted configuration to a key created inside it, and refuses calls without one", async () => {
    const key = podman("exec", NAME, "wayfind", "keys", "create", "--tenant", "acme", "--role", "agent");
    expect(key.status, key.stderr).toBe(0);
    const search = (headers: Record<string, string>) =>
      fetch(`${baseUrl}/wayfind.v1.ToolDiscoveryService/SearchTools`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify({ query: "should I take an umbrella tomorrow?" }),
      });
    type Answer = { tools: { name: string }[]; semanticStatus: string };
    // On a busy machine a request may miss its wait for the model (ranked by words, and it says so);
    // its vector is kept, so asking again finds it.
    let answer = (await (await search({ authorization: `Bearer ${key.stdout}` })).json()) as Answer;
    for (let i = 0; i < 10 && answer.semanticStatus !== "SEMANTIC_STATUS_READY"; i++) {
      await new Promise((resolve) => setTimeout(resolve, 300));
      answer = (await (await search({ authorization: `Bearer ${key.stdout}` })).json()) as Answer;
    }
    expect(answer.semanticStatus).toBe("SEMANTIC_STATUS_READY");
    expect(answer.tools[0]?.name).toBe("get_weather");
    // Loaded from the mounted file: the demo's other catalogs are not.
    const listed = (await (
      await fetch(`${baseUrl}/wayfind.v1.ToolDiscoveryService/ListTools`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${key.stdout}` },
        body: JSON.stringify({ showAllTools: true, pageSize: 500 }),
      })
    ).json()) as { tools: { name: string }[] };
    expect(listed.tools.some((tool) => tool.name.startsWith("slack."))).toBe(false);
    expect((await search({})).status).toBe(401);
  });

  it("stops within 10 s of SIGTERM, exiting 0", () => {
    const signalled = performance.now();
    expect(podman("kill", "--signal", "TERM", NAME).status).toBe(0);
    const waited = podman("wait", NAME);
    const seconds = (performance.now() - signalled) / 1000;
    expect(waited.stdout).toBe("0");
    expect(seconds).toBeLessThan(10);
  }, 30_000);
});
