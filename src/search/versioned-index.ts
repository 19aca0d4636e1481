/** One build lifecycle for every catalog's search index: versioned, built in slices, read your writes. */

import { runInSlices, runToEnd } from "../slices.ts";

/** What a catalog hands the lifecycle: how to tell its version and how to build its index. */
export interface IndexSource<I> {
  /** The catalog's version now: it grows with every change. */
  version(): number;
  /** A build of the catalog as it is now, yielding between small units of work. */
  build(): Generator<void, I>;
  /** Told each index that becomes the newest (the catalog's own follow-ups: caches, events). */
  adopted?(index: I): void;
}

/** A build of the index of the catalog at `version`. */
interface IndexBuild<I> {
  readonly steps: Generator<void, I>;
  readonly version: number;
}

/** A reader waiting for an index that holds `version`. */
interface Waiter<I> {
  readonly version: number;
  readonly resolve: (index: I) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * The newest index of a catalog and the build that follows its changes. A build starts after a
 * change (told by `changed`, or found by the next read), runs in slices between other calls, and
 * `ready()` gives a reader the build that holds its writes; `current()` runs it to its end at once
 * for readers that cannot wait.
 */
export class VersionedIndex<I> {
  /** The newest build and the catalog version it holds; dropped at a change, until the next is built. */
  private index: I | undefined;
  private indexVersion = -1;
  /** The build under way, run in slices by startBuild. */
  private build: IndexBuild<I> | undefined;
  /** Readers waiting for an index that holds their version (ready). */
  private waiting: Waiter<I>[] = [];

  constructor(private readonly source: IndexSource<I>) {}

  /**
   * Whether the index holds every change so far, without waiting or starting a build (the readiness
   * probe's `index`: ok or building).
   */
  get isCurrent(): boolean {
    return this.index !== undefined && this.indexVersion >= this.source.version();
  }

  /** The newest index built, if no change dropped it since: background work on an index stops when it is not. */
  isNewest(index: I): boolean {
    return this.index === index;
  }

  /**
   * Resolves once an index holds every change made before the call (a build is started if none
   * runs), with that build, without waiting for changes made since. Rejects if the build fails.
   */
  ready(): Promise<I> {
    const version = this.source.version();
    if (this.index && this.indexVersion >= version) return Promise.resolve(this.index);
    // A catalog that does not tell its changes is found changed here.
    this.changedTo(version);
    return new Promise((resolve, reject) => this.waiting.push({ version, resolve, reject }));
  }

  /**
   * An index that holds every change so far: the newest built when it does, else the build of every
   * change run to its end now.
   */
  current(): I {
    const version = this.source.version();
    if (this.index && this.indexVersion >= version) return this.index;
    const build = this.build?.version === version ? this.build : this.startBuild();
    try {
      return this.adopt(build, runToEnd(build.steps));
    } catch (error) {
      // A failed build is not resumed: the next read starts over.
      if (this.build === build) this.build = undefined;
      throw error;
    }
  }

  /**
   * After a change: a build under way is abandoned for one of the catalog as it is now, unless
   * readers wait for it; then it runs to its end and the next build follows (abandoning it would
   * keep them waiting for as long as changes keep coming). A reader may have built the current
   * index already: then there is nothing to do.
   */
  changed(): void {
    this.changedTo(this.source.version());
  }

  private changedTo(version: number): void {
    if (this.indexVersion >= version || this.build?.version === version) return;
    // No reader can use it any more (each waits for a newer one): let it go before the next is built.
    this.index = undefined;
    const running = this.build;
    if (running && this.waiting.some((waiter) => waiter.version <= running.version)) return;
    this.startBuild();
  }

  /** Starts building the index of the catalog as it is now, in slices between other calls. */
  private startBuild(): IndexBuild<I> {
    const build: IndexBuild<I> = { version: this.source.version(), steps: this.source.build() };
    this.build = build;
    runInSlices(build.steps, () => this.build === build).then(
      (index) => {
        if (index) this.adopt(build, index);
      },
      (error: unknown) => {
        if (this.build !== build) return;
        this.build = undefined;
        for (const waiter of this.wakeable(build.version)) waiter.reject(error);
        if (this.waiting.length > 0) this.startBuild();
      },
    );
    return build;
  }

  /** Makes the index `build` made the newest, wakes the readers whose changes it holds. */
  private adopt(build: IndexBuild<I>, index: I): I {
    if (this.build === build) this.build = undefined;
    if (build.version > this.indexVersion) {
      this.index = index;
      this.indexVersion = build.version;
      this.source.adopted?.(index);
    }
    for (const waiter of this.wakeable(build.version)) waiter.resolve(index);
    // Changes that came while readers waited for this build: build them next.
    if (!this.build && this.indexVersion < this.source.version()) this.startBuild();
    return index;
  }

  /** Takes the waiting readers that an index of `version` satisfies. */
  private wakeable(version: number): Waiter<I>[] {
    const wake = this.waiting.filter((waiter) => waiter.version <= version);
    this.waiting = this.waiting.filter((waiter) => waiter.version > version);
    return wake;
  }
}
