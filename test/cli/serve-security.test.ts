import { copyFileSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { describe, expect, it } from "vitest";
import { runCli } from "../support/cli.ts";
import { servedSerial, TLS_FIXTURES } from "../support/tls.ts";

// Issue 15: `wayfind serve --tls-cert/--tls-key` with SIGHUP reloads; auth `none` off loopback.
const FIXTURES = TLS_FIXTURES;

describe("wayfind serve --tls-cert --tls-key", () => {
  it("serves TLS and reloads the certificate on SIGHUP, logging it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "wayfind-cli-tls-"));
    copyFileSync(join(FIXTURES, "server.pem"), join(dir, "cert.pem"));
    copyFileSync(join(FIXTURES, "server-key.pem"), join(dir, "key.pem"));
    const serve = runCli([
      "serve",
      "--port",
      "0",
      "--data-dir",
      dir,
      "--tls-cert",
      join(dir, "cert.pem"),
      "--tls-key",
      join(dir, "key.pem"),
    ]);
    const lines = createInterface({ input: serve.child.stdout })[Symbol.asyncIterator]();
    const next = async (msg: string) => {
      for (let line = await lines.next(); !line.done; line = await lines.next()) {
        const entry = JSON.parse(line.value) as { msg: string; port?: number; tls?: boolean };
        if (entry.msg === msg) return entry;
      }
      throw new Error(`no "${msg}" line; stderr: ${serve.stderr.join("")}`);
    };
    const listening = await next("listening");
    expect(listening.tls).toBe(true);
    const port = listening.port ?? 0;
    const before = await servedSerial(port);

    copyFileSync(join(FIXTURES, "server-renewed.pem"), join(dir, "cert.pem"));
    copyFileSync(join(FIXTURES, "server-renewed-key.pem"), join(dir, "key.pem"));
    serve.child.kill("SIGHUP");
    await next("TLS certificate reloaded");
    expect(await servedSerial(port)).not.toBe(before);

    serve.child.kill("SIGTERM");
    expect(await serve.exited).toBe(0);
  }, 60_000);
});

describe("calls without credentials off loopback", () => {
  it("fail the start when the config allows them, until --insecure-allow-unauthenticated says so", async () => {
    const dir = mkdtempSync(join(tmpdir(), "wayfind-cli-insecure-"));
    const config = join(dir, "wayfind.yaml");
    writeFileSync(config, "auth: {allow_unauthenticated: true}\n");
    const args = ["serve", "--config", config, "--host", "0.0.0.0", "--port", "0", "--data-dir", dir];

    const refused = runCli(args);
    refused.child.stdout.resume();
    expect(await refused.exited).toBe(1);
    expect(refused.stderr.join("")).toContain("server.host 0.0.0.0 is not loopback");

    const insisted = runCli([...args, "--insecure-allow-unauthenticated"]);
    const lines = createInterface({ input: insisted.child.stdout });
    for await (const line of lines) if ((JSON.parse(line) as { msg: string }).msg === "listening") break;
    insisted.child.stdout.resume();
    insisted.child.kill("SIGTERM");
    expect(await insisted.exited).toBe(0);
  }, 60_000);
});
