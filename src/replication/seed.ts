import { open } from "node:fs/promises";
import type pg from "pg";
import { WayfindError } from "../errors.ts";
import { lockAppends } from "./change-log.ts";
import type { LogAppender } from "./log-appender.ts";
import { type StoredSnapshot, writeSnapshot } from "./snapshots.ts";

/** Who a seeded snapshot says made it (wayfind_snapshots.created_by). */
const SEEDED_BY = "wayfind storage copy-to-postgres";

/**
 * Starts a fleet's shared database from one server's state: in one transaction, `fill` writes the
 * shared tables and returns the file every new replica's copy then starts from (a snapshot through
 * change 0: prepareCopy restores it). Refused unless the database is a new one: no change, no
 * snapshot, no replica ever started on it (a replica's copy already claimed would never restore the
 * snapshot). Replicas starting meanwhile wait for the commit, then restore it.
 */
export async function seedEmptyDatabase(
  appender: LogAppender,
  fill: (client: pg.PoolClient) => Promise<string>,
): Promise<StoredSnapshot> {
  return appender.transaction(async (client) => {
    await lockAppends(client);
    // A replica reports itself before it looks for a snapshot (prepareCopy): it waits here.
    await client.query("LOCK TABLE wayfind_replicas IN EXCLUSIVE MODE");
    const { rows } = await client.query<{ changes: boolean; snapshots: boolean; replicas: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM wayfind_changes) AS changes,
         EXISTS (SELECT 1 FROM wayfind_snapshots) AS snapshots,
         EXISTS (SELECT 1 FROM wayfind_replicas) AS replicas`,
    );
    const held = rows[0];
    if (held?.changes || held?.snapshots || held?.replicas)
      throw new WayfindError(
        "failed_precondition",
        "the shared database is not a new one: it holds " +
          [held.changes && "changes", held.snapshots && "a snapshot", held.replicas && "replicas"]
            .filter(Boolean)
            .join(", ") +
          "; copy into a new, empty database, before any replica starts on it",
      );
    const file = await fill(client);
    const handle = await open(file, "r");
    try {
      return await writeSnapshot(client, handle, 0, SEEDED_BY);
    } finally {
      await handle.close();
    }
  });
}
