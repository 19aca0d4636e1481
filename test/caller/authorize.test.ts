import { describe, expect, it } from "vitest";
import { unauthenticatedPrincipal } from "../../src/auth/principal.ts";
import {
  authorizeSkillPackScope,
  sourceListingFor,
  toolOwnerFor,
  watchedTenant,
} from "../../src/caller/authorize.ts";
import { WayfindError } from "../../src/errors.ts";

const anonymous = unauthenticatedPrincipal("", false);
const acme = unauthenticatedPrincipal("acme", false);
const operator = unauthenticatedPrincipal("", true);
const operatorForAcme = unauthenticatedPrincipal("acme", true);

function denial(fn: () => unknown): WayfindError {
  try {
    fn();
  } catch (error) {
    if (error instanceof WayfindError) return error;
    throw error;
  }
  throw new Error("expected a denial");
}

describe("toolOwnerFor", () => {
  it("gives a tenant's registrations to its tenant, also when the operator acts for it", () => {
    expect(toolOwnerFor(acme)).toBe("acme");
    expect(toolOwnerFor(operatorForAcme)).toBe("acme");
  });

  it("makes the operator's registrations without a tenant global", () => {
    expect(toolOwnerFor(operator)).toBe("");
  });

  it("denies an anonymous caller, naming both ways to register", () => {
    const error = denial(() => toolOwnerFor(anonymous));
    expect(error.code).toBe("permission_denied");
    expect(error.message).toMatch(/caller\.tenant_id.*the operator/);
  });
});

describe("authorizeSkillPackScope", () => {
  it("lets only the operator load a GLOBAL pack", () => {
    expect(denial(() => authorizeSkillPackScope(acme, "global")).code).toBe("permission_denied");
    expect(denial(() => authorizeSkillPackScope(anonymous, "global")).code).toBe("permission_denied");
    expect(() => authorizeSkillPackScope(operator, "global")).not.toThrow();
  });

  it("leaves tenant and project packs to the tenant", () => {
    expect(() => authorizeSkillPackScope(acme, "tenant")).not.toThrow();
    expect(() => authorizeSkillPackScope(acme, "project")).not.toThrow();
  });
});

describe("sourceListingFor", () => {
  const owners = ["", "acme", "bravo"];
  it.each([
    ["the operator", operator, ["", "acme", "bravo"], true],
    ["a tenant", acme, ["", "acme"], false],
    ["an anonymous caller", anonymous, [""], false],
  ])(
    "lists for %s exactly the owners it may see, in full only for the operator",
    (_kind, principal, expected, everything) => {
      const listing = sourceListingFor(principal);
      expect(owners.filter(listing.owners)).toEqual(expected);
      expect(listing.everything).toBe(everything);
    },
  );
});

describe("watchedTenant", () => {
  it("confines a tenant to its own events and refuses another tenant's", () => {
    expect(watchedTenant(acme, "")).toBe("acme");
    expect(denial(() => watchedTenant(acme, "bravo")).code).toBe("permission_denied");
  });

  it("confines an anonymous caller to events without a tenant", () => {
    expect(watchedTenant(anonymous, "")).toBe("");
    expect(denial(() => watchedTenant(anonymous, "acme")).message).toContain(
      "an admin credential bound to no tenant",
    );
  });

  it("lets the operator watch every tenant or pick one", () => {
    expect(watchedTenant(operator, "")).toBeUndefined();
    expect(watchedTenant(operator, "bravo")).toBe("bravo");
  });
});
