import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    // expect.poll waits for what a real server or browser does next; on a busy machine that can
    // take longer than vitest's default second.
    expect: { poll: { timeout: 10_000 } },
    pool: "forks",
    globalSetup: ["test/support/global-setup.ts"],
    setupFiles: ["test/support/each-file.ts"],
  },
});
