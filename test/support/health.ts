import { expect } from "vitest";
import { Health } from "../../gen/ts/grpc/health/v1/health_pb.ts";
import type { TestServer } from "./server.ts";

/**
 * How long a health check may take while an attack or a large change goes through: answered by the
 * same event loop, it measures the longest stall. Wide, because the test machines are small and shared.
 */
export const HEALTH_BUDGET_MS = 250;

/** Health checks back to back until stopped; the slowest answer and how many were answered. */
export function watchHealth(server: TestServer): {
  stop(): Promise<{ slowestMs: number; answered: number }>;
} {
  const health = server.grpc(Health);
  let running = true;
  let slowestMs = 0;
  let answered = 0;
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      await health.check({});
      slowestMs = Math.max(slowestMs, performance.now() - started);
      answered++;
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { slowestMs, answered };
    },
  };
}

/** Runs `attack` while health checks run; every check must have been answered within the budget. */
export async function expectNoStall(server: TestServer, attack: () => Promise<void>): Promise<void> {
  const health = watchHealth(server);
  try {
    await attack();
    await new Promise((resolve) => setTimeout(resolve, 20));
  } catch (error) {
    await health.stop(); // no check may outlive the server
    throw error;
  }
  const { slowestMs, answered } = await health.stop();
  expect(answered).toBeGreaterThan(0);
  expect(slowestMs).toBeLessThan(HEALTH_BUDGET_MS);
}
