/**
 * JWT signature algorithms wayfind accepts: asymmetric only. A shared-secret (HS*) algorithm is never
 * accepted, so a token signed with a public key as an HMAC secret (HS/RS key confusion) cannot pass,
 * and `alg: none` is never in the list.
 */
export const ASYMMETRIC_JWT_ALGORITHMS = [
  "RS256",
  "RS384",
  "RS512",
  "PS256",
  "PS384",
  "PS512",
  "ES256",
  "ES384",
  "ES512",
  "EdDSA",
  "Ed25519",
] as const;
