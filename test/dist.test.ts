import { execFile } from "node:child_process";
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { distState, fingerprint, MANIFEST } from "../scripts/dist.js";

const REPO = join(import.meta.dirname, "..");

/** A checkout with sources, a "built" dist/ whose CLI prints `dist`, and a source CLI printing `tsx`. */
function checkout(): string {
  const root = mkdtempSync(join(tmpdir(), "wayfind-dist-"));
  const write = (file: string, text: string) => {
    mkdirSync(dirname(join(root, file)), { recursive: true });
    writeFileSync(join(root, file), text);
  };
  write("package.json", '{"type": "module"}\n');
  write("tsconfig.json", "{}\n");
  write("tsconfig.build.json", "{}\n");
  write("src/cli/main.ts", 'const runtime: string = "tsx";\nconsole.log(runtime);\n');
  write("gen/ts/wayfind/v1/common_pb.ts", "export {};\n");
  write("dist/src/cli/main.js", 'console.log("dist");\n');
  for (const file of ["bin/wayfind.js", "scripts/dist.js", "scripts/native.js", "scripts/tuning.js"]) {
    mkdirSync(dirname(join(root, file)), { recursive: true });
    copyFileSync(join(REPO, file), join(root, file));
  }
  symlinkSync(join(REPO, "node_modules"), join(root, "node_modules"));
  writeFileSync(join(root, MANIFEST), JSON.stringify({ files: fingerprint(root) }));
  return root;
}

describe("dist/ freshness", () => {
  it("is fresh as built, also when a file is rewritten with the same content (npm run generate)", () => {
    const root = checkout();
    expect(distState(root)).toBe("fresh");
    const later = new Date(Date.now() + 60_000);
    utimesSync(join(root, "gen/ts/wayfind/v1/common_pb.ts"), later, later);
    expect(distState(root)).toBe("fresh");
  });

  it("is stale when a source changes, appears or disappears, and missing without a manifest", () => {
    const edited = checkout();
    writeFileSync(join(edited, "src/cli/main.ts"), 'console.log("edited");\n');
    expect(distState(edited)).toBe("stale");
    const added = checkout();
    writeFileSync(join(added, "src/new.ts"), "export {};\n");
    expect(distState(added)).toBe("stale");
    const removed = checkout();
    rmSync(join(removed, "gen/ts/wayfind/v1/common_pb.ts"));
    expect(distState(removed)).toBe("stale");
    const unbuilt = checkout();
    rmSync(join(unbuilt, MANIFEST));
    expect(distState(unbuilt)).toBe("missing");
  });

  it("is fresh in a packaged install: dist/ without any of the sources it was built from", () => {
    const packaged = checkout();
    for (const input of ["src", "gen", "tsconfig.json", "tsconfig.build.json"])
      rmSync(join(packaged, input), { recursive: true });
    expect(distState(packaged)).toBe("fresh");
    const partly = checkout();
    rmSync(join(partly, "src"), { recursive: true });
    expect(distState(partly)).toBe("stale");
  });

  it("bin/wayfind.js runs dist/ when fresh and the sources through tsx otherwise", async () => {
    const run = promisify(execFile);
    const root = checkout();
    const bin = join(root, "bin/wayfind.js");
    expect((await run(process.execPath, [bin])).stdout).toBe("dist\n");
    writeFileSync(
      join(root, "src/cli/main.ts"),
      'const runtime: string = "tsx, edited";\nconsole.log(runtime);\n',
    );
    const stale = await run(process.execPath, [bin]);
    expect(stale.stdout).toBe("tsx, edited\n");
    expect(stale.stderr).toContain("npm run build");
  });
});
