import type { Db } from "../database/sqlite.ts";

/** Requests looked up per statement, and vectors of stale requests deleted per statement. */
export const VECTOR_CHUNK = 200;

/**
 * The vectors of a tenant's learned requests, kept in this server's copy so a restart or a model read
 * again does not embed them again. Keyed by tenant, never shared between tenants: whether a request
 * is embedded already must not tell one tenant what another asked. Each server computes its own (the
 * same model gives the same vectors), so the table is local, not replicated.
 */
export class LearnedVectors {
  private readonly select;
  private readonly insert;
  private readonly deleteStale;

  constructor(
    db: Db,
    private readonly modelId: string,
  ) {
    this.select = db.prepare<[string, string, string], { request: string; vector: Buffer }>(
      `SELECT request, vector FROM learned_request_vectors
       WHERE tenant_id = ? AND model_id = ? AND request IN (SELECT value FROM json_each(?))`,
    );
    this.insert = db.prepare<[string, string, string, Buffer]>(
      "INSERT OR REPLACE INTO learned_request_vectors (tenant_id, request, model_id, vector) VALUES (?, ?, ?, ?)",
    );
    // A vector whose request the tenant no longer holds (forgotten, reset) is stale.
    this.deleteStale = db.prepare<[string, string]>(
      `DELETE FROM learned_request_vectors WHERE tenant_id = ? AND request IN (
         SELECT v.request FROM learned_request_vectors v
         WHERE v.tenant_id = ? AND NOT EXISTS (
           SELECT 1 FROM learned_requests r WHERE r.tenant_id = v.tenant_id AND r.request = v.request)
         LIMIT ${VECTOR_CHUNK})`,
    );
  }

  /** The stored vectors of up to VECTOR_CHUNK of `requests`, by request. */
  read(tenantId: string, requests: readonly string[]): Map<string, Float32Array> {
    if (requests.length === 0) return new Map();
    const rows = this.select.all(tenantId, this.modelId, JSON.stringify(requests.slice(0, VECTOR_CHUNK)));
    return new Map(rows.map((row) => [row.request, vectorOf(row.vector)]));
  }

  save(tenantId: string, request: string, vector: Float32Array): void {
    this.insert.run(
      tenantId,
      request,
      this.modelId,
      Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength),
    );
  }

  /** Deletes up to VECTOR_CHUNK stale vectors of the tenant; false once none is left. */
  forgetStale(tenantId: string): boolean {
    return this.deleteStale.run(tenantId, tenantId).changes > 0;
  }
}

function vectorOf(blob: Buffer): Float32Array {
  // A copy: the blob's buffer may be shared and unaligned.
  const copy = new Uint8Array(blob.byteLength);
  copy.set(blob);
  return new Float32Array(copy.buffer);
}
