import type { Session } from "./session.ts";

/** What every page of the console is given. */
export interface PageProps {
  readonly session: Session;
  /** The tenant the operator looks as ("" = the credential's own, or no tenant). */
  readonly tenant: string;
}
