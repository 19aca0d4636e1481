import type { Document } from "yaml";

/**
 * Most alias expansions one YAML document may make. Anchors that alias each other nest
 * exponentially ("billion laughs": nine lines expand to a billion nodes), so every YAML that
 * wayfind reads (config, catalog files, skill packs) is converted with this bound.
 */
export const YAML_MAX_ALIAS_COUNT = 100;

/**
 * The document's value, or why it has none: aliases that expand past the bound, or an alias of an
 * unknown anchor. The `yaml` package throws a ReferenceError for both; callers report a problem
 * naming the file instead of failing with an internal error.
 */
export function yamlValue(doc: Document): { value: unknown } | { problem: string } {
  try {
    return { value: doc.toJS({ maxAliasCount: YAML_MAX_ALIAS_COUNT }) };
  } catch (error) {
    if (!(error instanceof ReferenceError)) throw error;
    return {
      problem: /excessive alias count/i.test(error.message)
        ? `its aliases expand to more than ${YAML_MAX_ALIAS_COUNT} nodes; use fewer anchors and aliases (*name)`
        : error.message,
    };
  }
}
