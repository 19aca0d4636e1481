import { randomUUID } from "node:crypto";
import { rm } from "node:fs/promises";
import { errorReason } from "../errors.ts";
import type { ChangeLog } from "./change-log.ts";
import type { HeldLease, LeaseOptions } from "./lease.ts";
import { SNAPSHOT_SUFFIX, type SnapshotStore, takeSnapshot } from "./snapshots.ts";

/** How the change log is kept bounded (storage.postgres.compaction). */
export interface CompactionSettings {
  /** A snapshot is taken once the log has this many changes past the newest snapshot. */
  readonly everyChanges: number;
  /** How often the replica holding the compaction lease looks. */
  readonly checkIntervalMs: number;
  /** A replica not heard from for this long no longer holds compaction back (it restores on return). */
  readonly replicaTimeoutMs: number;
}

/** What one round of compaction did, for the log. */
export interface CompactionReport {
  /** The snapshot taken this round, if one was. */
  readonly snapshot?: { readonly seq: number; readonly bytes: number; readonly ms: number };
  /** Every change through this seq is deleted from the log. */
  readonly compactedThrough: number;
  readonly deleted: number;
}

export interface CompactionOptions {
  readonly log: ChangeLog;
  readonly snapshots: SnapshotStore;
  readonly settings: CompactionSettings;
  readonly replicaId: string;
  /** This replica's SQLite copy, which its snapshots are taken of. */
  readonly dataFile: string;
  readonly appliedSeq: () => number;
  readonly lease: (name: string, handlers: Pick<LeaseOptions, "onAcquired" | "onLost">) => HeldLease;
  readonly onCompacted: (report: CompactionReport) => void;
  readonly onError: (error: Error) => void;
}

/** Reported at least this often, and three times per replica timeout, so no live replica times out. */
const MAX_HEARTBEAT_MS = 5_000;

/**
 * Keeps the shared change log bounded (docs/replicas.md "Compaction"). Every replica reports the seq
 * its copy has applied; the one replica holding the "log-compaction" lease takes a snapshot of its copy
 * once `everyChanges` changes came since the newest, stores it, and deletes the changes that the
 * snapshot holds and every live replica has applied. Returns the function that stops it.
 */
export function startCompaction(options: CompactionOptions): () => Promise<void> {
  const { log, snapshots, settings, replicaId } = options;
  let stopped = false;
  let running: Promise<void> | undefined;

  const reportApplied = () => {
    log.reportApplied(replicaId, options.appliedSeq()).catch(options.onError);
  };
  // At once too: started after the replica's first catch-up, which may have applied a long log.
  reportApplied();
  const heartbeat = setInterval(reportApplied, Math.min(MAX_HEARTBEAT_MS, settings.replicaTimeoutMs / 3));
  heartbeat.unref();

  const round = async (): Promise<void> => {
    const applied = options.appliedSeq();
    await log.reportApplied(replicaId, applied);
    let snapshot: CompactionReport["snapshot"];
    const latest = await snapshots.latest();
    let snapshotSeq = latest?.seq ?? 0;
    if (applied - snapshotSeq >= settings.everyChanges) {
      const started = performance.now();
      const file = `${options.dataFile}${SNAPSHOT_SUFFIX}${randomUUID()}`;
      try {
        const seq = await takeSnapshot(options.dataFile, file);
        if (stopped) return;
        const stored = await snapshots.store(file, seq, replicaId);
        snapshot = { seq, bytes: stored.bytes, ms: Math.round(performance.now() - started) };
        snapshotSeq = seq;
      } finally {
        await rm(file, { force: true });
      }
    }
    if (snapshotSeq === 0) return;
    const compacted = await log.compact(snapshotSeq, settings.replicaTimeoutMs);
    if (snapshot !== undefined || compacted.deleted > 0)
      options.onCompacted({ snapshot, compactedThrough: compacted.through, deleted: compacted.deleted });
  };

  let timer: NodeJS.Timeout | undefined;
  const lease = options.lease("log-compaction", {
    onAcquired: () => {
      timer = setInterval(() => {
        if (running !== undefined || stopped) return;
        running = round()
          .catch((error: unknown) =>
            options.onError(new Error(`log compaction failed: ${errorReason(error)}`)),
          )
          .finally(() => {
            running = undefined;
          });
      }, settings.checkIntervalMs);
      timer.unref();
    },
    onLost: () => clearInterval(timer),
  });

  return async () => {
    stopped = true;
    clearInterval(heartbeat);
    clearInterval(timer);
    await lease.stop();
    await running;
  };
}
