/**
 * A map that drops the least recently used entry first (Map order = use order): past `capacity`
 * entries by itself, or, unbounded, where its owner bounds it by some other measure (walking
 * `entries()`, oldest first, and deleting).
 */
export class LruCache<K, V> {
  private readonly map = new Map<K, V>();

  constructor(private readonly capacity = Number.POSITIVE_INFINITY) {}

  /** The value, marked most recently used. */
  get(key: K): V | undefined {
    const value = this.map.get(key);
    if (value === undefined) return undefined;
    // Re-inserting marks it most recently used.
    this.map.delete(key);
    this.map.set(key, value);
    return value;
  }

  /** The value, its place in the use order unchanged: a look that is not a use. */
  peek(key: K): V | undefined {
    return this.map.get(key);
  }

  set(key: K, value: V): void {
    this.map.delete(key);
    if (this.map.size >= this.capacity) {
      const oldest = this.map.keys().next();
      if (!oldest.done) this.map.delete(oldest.value);
    }
    this.map.set(key, value);
  }

  delete(key: K): void {
    this.map.delete(key);
  }

  has(key: K): boolean {
    return this.map.has(key);
  }

  /** The entries, least recently used first; deleting while walking them is safe. */
  entries(): IterableIterator<[K, V]> {
    return this.map.entries();
  }
}
