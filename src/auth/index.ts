/** Credentials → principal → admitted call. The server wires these in src/server/pipeline.ts. */
export { type ApiKey, ApiKeyStore, apiKeySha256 } from "./api-keys.ts";
export { Authenticator, OPERATOR_ROLE, ROLE_HEADER } from "./authenticate.ts";
export { admitCall, admitMcpRequest } from "./bind.ts";
export { CredentialWatch } from "./credential-watch.ts";
export { KeyAdmin, type KeyRequest } from "./key-admin.ts";
export { KeyBook, LocalKeyRecords } from "./key-book.ts";
export { PrincipalLimits } from "./limits.ts";
export { CLIENT_CERTIFICATE_HEADER, clientCertificateHeader } from "./mtls.ts";
export { METHOD_ROLES } from "./roles.ts";
export { authMigrations } from "./schema.ts";
export { insertKeyRows, KEYS_POSTGRES_MIGRATIONS, SharedKeyRecords } from "./shared-keys.ts";
export { isLoopback, unauthenticatedAllowed } from "./unauthenticated.ts";
