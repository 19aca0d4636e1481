import { WayfindError } from "../../src/errors.ts";

/** The message of the NOT_FOUND `call` throws; fails when it throws anything else or nothing. */
export async function notFoundMessage(call: () => unknown): Promise<string> {
  try {
    await call();
  } catch (error) {
    if (error instanceof WayfindError && error.code === "not_found") return error.message;
    throw error;
  }
  throw new Error("expected NOT_FOUND");
}
