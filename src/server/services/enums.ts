import { invalidArgument } from "../../errors.ts";

/**
 * Two-way map between a proto enum and a domain string union. Proto enums are open: an unknown
 * number from a newer or broken client is INVALID_ARGUMENT, and 0 (UNSPECIFIED) means "not given".
 */
export class EnumMap<D extends string> {
  readonly #toDomain = new Map<number, D>();
  readonly #toProto = new Map<D, number>();

  constructor(pairs: readonly (readonly [number, D])[]) {
    for (const [proto, domain] of pairs) {
      this.#toDomain.set(proto, domain);
      this.#toProto.set(domain, proto);
    }
  }

  /** The domain value, `undefined` for UNSPECIFIED; throws for an unknown number. */
  fromProto(value: number, field: string): D | undefined {
    if (value === 0) return undefined;
    const domain = this.#toDomain.get(value);
    if (domain === undefined) throw invalidArgument(`${field}: unknown enum value ${value}`);
    return domain;
  }

  toProto(value: D): number {
    return this.#toProto.get(value) ?? 0;
  }
}
