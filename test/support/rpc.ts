import { ConnectError } from "@connectrpc/connect";

/** The error a call fails with; fails the test if the call succeeds. */
export async function failure(call: Promise<unknown>): Promise<ConnectError> {
  try {
    await call;
  } catch (error) {
    return ConnectError.from(error);
  }
  throw new Error("expected the call to fail, but it succeeded");
}
