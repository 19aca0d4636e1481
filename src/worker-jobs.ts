import { parentPort, type Transferable, Worker } from "node:worker_threads";
import { workerEntry } from "./worker-entry.ts";

/** What travels to a job worker: the job with an id its answer carries back. */
interface JobMessage<Job> {
  readonly id: number;
  readonly job: Job;
}

/** What comes back: the handler's result, or what it threw as text. */
type OutcomeMessage<Result> =
  | { readonly id: number; readonly result: Result }
  | { readonly id: number; readonly error: string };

/**
 * How long a worker may sit without jobs before it is ended. Its thread holds a JavaScript heap of its
 * own, resident while it lives: a schema worker that checked a catalog at start-up need not keep it.
 */
const IDLE_MS = 30_000;

/**
 * A worker thread that runs jobs one at a time off the event loop (work that would hold the loop for
 * tens of milliseconds: decoding a large request, compiling a large JSON Schema). Started on the first
 * job and ended after a while without any; it keeps the process alive only while it has jobs, and is
 * started again if it dies (the jobs it held fail). A job that throws in the worker rejects with the
 * thrown message as a plain string.
 */
export class JobWorker<Job, Result> {
  private worker: Worker | undefined;
  private idle: NodeJS.Timeout | undefined;
  private nextId = 1;
  private readonly pending = new Map<
    number,
    { resolve: (r: Result) => void; reject: (e: unknown) => void }
  >();
  private isClosed = false;

  /**
   * `name`: the worker module beside `besideUrl` (see workerEntry); it calls serveJobs. `idleMs`: how
   * long it may wait for a job before it is ended (default IDLE_MS).
   */
  constructor(
    private readonly besideUrl: string,
    private readonly name: string,
    private readonly idleMs = IDLE_MS,
  ) {}

  /** Whether a worker thread is running (started by a job, not yet ended for idleness). */
  get running(): boolean {
    return this.worker !== undefined;
  }

  get closed(): boolean {
    return this.isClosed;
  }

  run(job: Job, transfer: readonly Transferable[] = []): Promise<Result> {
    if (this.isClosed) return Promise.reject(new Error(`the ${this.name} is closed`));
    return new Promise((resolve, reject) => {
      const id = this.nextId++;
      this.pending.set(id, { resolve, reject });
      clearTimeout(this.idle);
      const worker = this.ensureWorker();
      worker.ref();
      worker.postMessage({ id, job } satisfies JobMessage<Job>, [...transfer]);
    });
  }

  /** Stops the worker; jobs still waiting fail. */
  async close(): Promise<void> {
    this.isClosed = true;
    clearTimeout(this.idle);
    const worker = this.worker;
    this.worker = undefined;
    this.failPending(new Error("the server is shutting down"));
    await worker?.terminate();
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(workerEntry(this.besideUrl, this.name));
    worker.unref();
    worker.on("message", (outcome: OutcomeMessage<Result>) => {
      const job = this.pending.get(outcome.id);
      this.pending.delete(outcome.id);
      if (this.pending.size === 0) {
        worker.unref();
        this.idle = setTimeout(() => this.endIdle(worker), this.idleMs).unref();
      }
      if ("error" in outcome) job?.reject(outcome.error);
      else job?.resolve(outcome.result);
    });
    const lost = (reason: unknown) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.failPending(
        reason instanceof Error ? reason : new Error(`the ${this.name} exited (${String(reason)})`),
      );
    };
    worker.on("error", lost);
    worker.on("exit", lost);
    this.worker = worker;
    return worker;
  }

  /** Ends the worker if it is still the current one and nothing was asked of it meanwhile. */
  private endIdle(worker: Worker): void {
    if (this.worker !== worker || this.pending.size > 0) return;
    this.worker = undefined;
    void worker.terminate();
  }

  private failPending(error: Error): void {
    const jobs = [...this.pending.values()];
    this.pending.clear();
    for (const job of jobs) job.reject(error);
  }
}

/**
 * The worker side of JobWorker: answers each job with `handle`'s result, or with `describe(error)`
 * when it throws.
 */
export function serveJobs<Job, Result>(
  handle: (job: Job) => Result,
  describe: (error: unknown) => string,
): void {
  const port = parentPort;
  if (port === null) throw new Error("a job worker runs only as a worker thread");
  port.on("message", ({ id, job }: JobMessage<Job>) => {
    let outcome: OutcomeMessage<Result>;
    try {
      outcome = { id, result: handle(job) };
    } catch (error) {
      outcome = { id, error: describe(error) };
    }
    port.postMessage(outcome);
  });
}
