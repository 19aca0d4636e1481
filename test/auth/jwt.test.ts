import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Code } from "@connectrpc/connect";
import { exportJWK, exportSPKI, generateKeyPair, type JWK, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ToolDiscoveryService } from "../../gen/ts/wayfind/v1/tools_pb.ts";
import { JwtVerifier } from "../../src/auth/jwt.ts";
import { authConfig } from "../../src/config/auth.ts";
import { failure } from "../support/rpc.ts";
import { type RouterTestServer, startRouterServer } from "../support/server.ts";

// Issue 15 "JWT / OIDC bearer tokens": verified with jose against a JWKS served by a local HTTP server.
const ISSUER = "https://issuer.test";
const AUDIENCE = "wayfind";

type KeyPair = Awaited<ReturnType<typeof generateKeyPair>> & { kid: string; jwk: JWK };
async function keyPair(kid: string): Promise<KeyPair> {
  const pair = await generateKeyPair("RS256", { extractable: true });
  return { ...pair, kid, jwk: { ...(await exportJWK(pair.publicKey)), kid, alg: "RS256", use: "sig" } };
}

let published: JWK[] = [];
let jwksFetches = 0;
let jwks: Server;
let wayfind: RouterTestServer;
let first: KeyPair;

/** A token as an identity provider issues it; `claims` and `options` override the valid defaults. */
async function token(
  key: KeyPair,
  claims: Record<string, unknown> = {},
  options: {
    issuer?: string;
    audience?: string;
    expiresIn?: string | number;
    notBefore?: string | number;
  } = {},
) {
  const jwt = new SignJWT({ tenant: "acme", roles: ["agent"], ...claims })
    .setProtectedHeader({ alg: "RS256", kid: key.kid })
    .setIssuer(options.issuer ?? ISSUER)
    .setAudience(options.audience ?? AUDIENCE)
    .setSubject("user-7")
    .setIssuedAt()
    .setExpirationTime(options.expiresIn ?? "5m");
  if (options.notBefore !== undefined) jwt.setNotBefore(options.notBefore);
  return jwt.sign(key.privateKey);
}

const list = (bearer: string, caller: object = {}) =>
  wayfind.grpc(ToolDiscoveryService, { token: bearer }).listTools({ caller });

async function refusal(bearer: string): Promise<string> {
  const error = await failure(list(bearer));
  expect(error.code).toBe(Code.Unauthenticated);
  return error.rawMessage;
}

beforeAll(async () => {
  first = await keyPair("key-1");
  published = [first.jwk];
  jwks = createServer((_request, response) => {
    jwksFetches++;
    response.setHeader("content-type", "application/json");
    response.end(JSON.stringify({ keys: published }));
  });
  jwks.listen(0, "127.0.0.1");
  await new Promise((resolve) => jwks.once("listening", resolve));
  wayfind = await startRouterServer({
    auth: {
      allow_unauthenticated: false,
      jwt: {
        jwks_url: `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks`,
        issuer: ISSUER,
        audience: AUDIENCE,
        clock_skew_seconds: 5,
        jwks_cooldown_seconds: 0,
      },
    },
  });
});
afterAll(async () => {
  await wayfind.stop();
  jwks.close();
});

describe("a valid token", () => {
  it("admits the call as the tenant its claim names, and refuses another tenant", async () => {
    await expect(list(await token(first))).resolves.toBeDefined();
    const error = await failure(list(await token(first), { tenantId: "globex" }));
    expect(error.code).toBe(Code.PermissionDenied);
  });

  it("is verified once and then served from the cache until it expires", async () => {
    const bearer = await token(first);
    await list(bearer);
    const fetches = jwksFetches;
    for (let i = 0; i < 5; i++) await list(bearer);
    expect(jwksFetches).toBe(fetches);
  });

  it("binds the user claim: a caller.user_id naming someone else is refused", async () => {
    const error = await failure(list(await token(first), { userId: "user-8" }));
    expect(error.code).toBe(Code.PermissionDenied);
    expect(error.rawMessage).toContain("is not the user this credential names");
  });

  it("without a roles claim gets no role, so nothing is admitted", async () => {
    const error = await failure(list(await token(first, { roles: undefined })));
    expect(error.code).toBe(Code.PermissionDenied);
    expect(error.rawMessage).toContain("needs the agent role; this credential has no role");
  });
});

describe("tokens that are refused", () => {
  it("an expired one", async () => {
    expect(await refusal(await token(first, {}, { expiresIn: Math.floor(Date.now() / 1000) - 60 }))).toBe(
      "bearer token has expired; get a new one",
    );
  });

  it("one not valid yet (beyond the clock skew)", async () => {
    expect(await refusal(await token(first, {}, { notBefore: "1h" }))).toBe(
      "bearer token is not valid yet (nbf)",
    );
  });

  it("a wrong issuer or audience", async () => {
    expect(await refusal(await token(first, {}, { issuer: "https://evil.test" }))).toContain('"iss" claim');
    expect(await refusal(await token(first, {}, { audience: "other-service" }))).toContain('"aud" claim');
  });

  it("alg: none", async () => {
    const header = Buffer.from(JSON.stringify({ alg: "none", typ: "JWT" })).toString("base64url");
    const payload = Buffer.from(
      JSON.stringify({
        iss: ISSUER,
        aud: AUDIENCE,
        tenant: "acme",
        roles: ["admin"],
        exp: Date.now() / 1000 + 60,
      }),
    ).toString("base64url");
    expect(await refusal(`${header}.${payload}.`)).toContain("algorithm is not accepted");
  });

  it("HS256 signed with the public key as the secret (key confusion)", async () => {
    const secret = new TextEncoder().encode(await exportSPKI(first.publicKey));
    const forged = await new SignJWT({ tenant: "acme", roles: ["admin"] })
      .setProtectedHeader({ alg: "HS256", kid: first.kid })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setExpirationTime("5m")
      .sign(secret);
    expect(await refusal(forged)).toContain("algorithm is not accepted");
  });

  it("a tampered payload", async () => {
    const [header, , signature] = (await token(first)).split(".");
    const payload = Buffer.from(
      JSON.stringify({
        iss: ISSUER,
        aud: AUDIENCE,
        tenant: "globex",
        roles: ["admin"],
        exp: Date.now() / 1000 + 60,
      }),
    ).toString("base64url");
    expect(await refusal(`${header}.${payload}.${signature}`)).toBe(
      "bearer token's signature does not verify",
    );
  });

  it("an oversize token, before any parsing", async () => {
    expect(await refusal(`${"a".repeat(9000)}.b.c`)).toContain("at most 8192 characters");
  });

  it("one without a tenant claim", async () => {
    expect(await refusal(await token(first, { tenant: undefined }))).toBe(
      'token has no "tenant" claim naming its tenant',
    );
  });
});

describe("key rotation", () => {
  it("refetches the JWKS for an unknown kid, and accepts the new key once published", async () => {
    const second = await keyPair("key-2");
    expect(await refusal(await token(second))).toContain("no key of the server's key set matches");
    published = [first.jwk, second.jwk];
    const fetches = jwksFetches;
    await expect(list(await token(second))).resolves.toBeDefined();
    expect(jwksFetches).toBe(fetches + 1);
  });
});

describe("static public keys (auth.jwt.public_keys)", () => {
  it("verify tokens against a PEM key without any JWKS", async () => {
    const pem = await exportSPKI(first.publicKey);
    const { jwt } = authConfig(
      { jwt: { public_keys: [pem], issuer: ISSUER, audience: AUDIENCE } },
      (path) => path,
    );
    if (!jwt) throw new Error("auth.jwt did not load");
    const verifier = new JwtVerifier(jwt);
    const principal = await verifier.verify(await token(first));
    expect(principal).toMatchObject({
      id: "jwt:user-7",
      tenantId: "acme",
      userId: "user-7",
      operator: false,
    });
    expect([...principal.roles]).toEqual(["agent"]);
  });
});
