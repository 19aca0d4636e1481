import { setImmediate as nextTurn } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { type IndexSource, VersionedIndex } from "../../src/search/versioned-index.ts";

/**
 * A catalog of words whose index is the words it held when its build started, built one word per
 * step, so a build spans several turns of the event loop.
 */
class WordCatalog implements IndexSource<readonly string[]> {
  words: string[] = [];
  changes = 0;
  buildsStarted = 0;
  adoptedIndexes: (readonly string[])[] = [];
  failNextBuild = false;

  add(word: string): void {
    this.words.push(word);
    this.changes++;
  }

  version(): number {
    return this.changes;
  }

  build(): Generator<void, readonly string[]> {
    this.buildsStarted++;
    const fail = this.failNextBuild;
    this.failNextBuild = false;
    // The words as they are when the build starts, as a catalog's build takes its documents.
    return buildOf([...this.words], fail);
  }

  adopted(index: readonly string[]): void {
    this.adoptedIndexes.push(index);
  }
}

function* buildOf(words: readonly string[], fail: boolean): Generator<void, readonly string[]> {
  const built: string[] = [];
  for (const word of words) {
    yield;
    // Each word is a few milliseconds of work, so a build spans several slices (turns of the loop).
    const until = performance.now() + 4;
    while (performance.now() < until);
    if (fail) throw new Error("the build broke");
    built.push(word);
  }
  return built;
}

describe("VersionedIndex", () => {
  it("gives a reader an index that holds every change made before it asked", async () => {
    const catalog = new WordCatalog();
    const builds = new VersionedIndex(catalog);
    catalog.add("alpha");
    catalog.add("beta");
    const index = builds.ready();
    catalog.add("gamma");
    expect(await index).toEqual(["alpha", "beta"]);
    expect(await builds.ready()).toEqual(["alpha", "beta", "gamma"]);
  });

  it("is current once the newest build holds every change, and not after the next change", async () => {
    const catalog = new WordCatalog();
    const builds = new VersionedIndex(catalog);
    catalog.add("alpha");
    expect(builds.isCurrent).toBe(false);
    const index = await builds.ready();
    expect(builds.isCurrent).toBe(true);
    expect(builds.isNewest(index)).toBe(true);
    catalog.add("beta");
    builds.changed();
    expect(builds.isCurrent).toBe(false);
    expect(builds.isNewest(index)).toBe(false);
  });

  it("builds at once for a reader that cannot wait", () => {
    const catalog = new WordCatalog();
    const builds = new VersionedIndex(catalog);
    catalog.add("alpha");
    expect(builds.current()).toEqual(["alpha"]);
    expect(builds.current()).toBe(builds.current());
    expect(catalog.buildsStarted).toBe(1);
  });

  it("abandons a build no reader waits for when the catalog changes again", async () => {
    const catalog = new WordCatalog();
    const builds = new VersionedIndex(catalog);
    const words = ["a", "b", "c", "d", "e", "f", "g", "h"];
    for (const word of words) catalog.add(word);
    builds.changed();
    await nextTurn();
    expect(builds.isCurrent).toBe(false);
    catalog.add("i");
    builds.changed();
    expect(await builds.ready()).toEqual([...words, "i"]);
    // The first build was left, not run to its end: only the newest index was made the newest.
    expect(catalog.adoptedIndexes).toEqual([[...words, "i"]]);
  });

  it("runs a build readers wait for to its end, then builds the changes that came meanwhile", async () => {
    const catalog = new WordCatalog();
    const builds = new VersionedIndex(catalog);
    for (const word of ["a", "b", "c"]) catalog.add(word);
    const waited = builds.ready();
    catalog.add("d");
    builds.changed();
    expect(await waited).toEqual(["a", "b", "c"]);
    expect(await builds.ready()).toEqual(["a", "b", "c", "d"]);
    expect(catalog.adoptedIndexes.length).toBe(2);
  });

  it("tells the catalog of each new index once", async () => {
    const catalog = new WordCatalog();
    const builds = new VersionedIndex(catalog);
    catalog.add("alpha");
    await Promise.all([builds.ready(), builds.ready(), builds.ready()]);
    builds.current();
    expect(catalog.adoptedIndexes).toEqual([["alpha"]]);
  });

  it("rejects the readers of a failed build, and the next read starts over", async () => {
    const catalog = new WordCatalog();
    const builds = new VersionedIndex(catalog);
    catalog.add("alpha");
    catalog.failNextBuild = true;
    await expect(builds.ready()).rejects.toThrow("the build broke");
    expect(builds.isCurrent).toBe(false);
    expect(await builds.ready()).toEqual(["alpha"]);
  });

  it("finds a catalog changed at the next read when the catalog does not tell its changes", async () => {
    const catalog = new WordCatalog();
    const builds = new VersionedIndex(catalog);
    catalog.add("alpha");
    expect(await builds.ready()).toEqual(["alpha"]);
    catalog.add("beta");
    expect(await builds.ready()).toEqual(["alpha", "beta"]);
    catalog.add("gamma");
    expect(builds.current()).toEqual(["alpha", "beta", "gamma"]);
  });
});
