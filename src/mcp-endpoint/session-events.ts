/**
 * The last events a session sent, so a client whose stream broke resumes it where it stopped: it
 * reconnects with the id of the last event it read (Last-Event-ID) and is sent the rest of that
 * stream (MCP Streamable HTTP, resumability). Events are kept as the JSON they were sent as.
 *
 * Bounded per session: the newest MAX_EVENTS events and MAX_CHARS of them, the oldest forgotten first
 * (the newest is kept whatever its size); a stream resumed from a forgotten event cannot be resumed.
 */

const MAX_EVENTS = 256;
const MAX_CHARS = 8 * 1024 * 1024;

interface Stored {
  readonly streamId: string;
  readonly data: string;
}

export class SessionEvents {
  /** By event id, oldest first. */
  private readonly events = new Map<string, Stored>();
  private chars = 0;
  private counter = 0;

  /** Keeps `data`, sent on stream `streamId`; its event id. */
  store(streamId: string, data: string): string {
    const id = String(++this.counter);
    this.events.set(id, { streamId, data });
    this.chars += data.length;
    for (const [oldest, stored] of this.events) {
      if (this.events.size <= MAX_EVENTS && (this.chars <= MAX_CHARS || oldest === id)) break;
      this.events.delete(oldest);
      this.chars -= stored.data.length;
    }
    return id;
  }

  /** The stream event `eventId` was sent on; undefined for an event not kept (or never sent). */
  streamOf(eventId: string): string | undefined {
    return this.events.get(eventId)?.streamId;
  }

  /** The events sent on the same stream after `eventId`, oldest first. */
  after(eventId: string): { readonly id: string; readonly data: string }[] {
    const streamId = this.streamOf(eventId);
    const later: { id: string; data: string }[] = [];
    let passed = false;
    for (const [id, stored] of this.events) {
      if (passed && stored.streamId === streamId) later.push({ id, data: stored.data });
      if (id === eventId) passed = true;
    }
    return later;
  }
}
