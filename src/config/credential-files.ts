import type { Path } from "./problems.ts";
import type { WayfindConfig } from "./types.ts";

/** Files the server reads for TLS, authentication and tenants' MCP credentials, with the config keys that name them. */
export function credentialFiles(config: WayfindConfig): { path: Path; resolved: string; what: string }[] {
  const { tls } = config.server;
  const files = [
    ...(tls
      ? [
          { path: ["server", "tls", "cert_file"], resolved: tls.certFile, what: "TLS certificate" },
          { path: ["server", "tls", "key_file"], resolved: tls.keyFile, what: "TLS key" },
          ...(tls.clientCaFile
            ? [{ path: ["server", "tls", "client_ca_file"], resolved: tls.clientCaFile, what: "client CA" }]
            : []),
        ]
      : []),
    ...(config.auth.mtls?.clientCa
      ? [{ path: ["auth", "mtls", "client_ca"], resolved: config.auth.mtls.clientCa, what: "client CA" }]
      : []),
    ...(config.auth.jwt?.publicKeys ?? []).flatMap((key, i) =>
      typeof key === "string" && !key.includes("-----BEGIN")
        ? [{ path: ["auth", "jwt", "public_keys", i], resolved: key, what: "JWT public key" }]
        : [],
    ),
    ...config.mcpServers.flatMap((server, i) =>
      Object.entries(server.tenantCredentials).flatMap(([tenant, credentials]) =>
        (["headers", "env"] as const).flatMap((kind) =>
          Object.entries(credentials[kind]).flatMap(([key, ref]) =>
            "file" in ref
              ? [
                  {
                    path: ["mcp_servers", i, "tenant_credentials", tenant, kind, key, "file"],
                    resolved: ref.file,
                    what: "secret file",
                  },
                ]
              : [],
          ),
        ),
      ),
    ),
  ];
  return files as { path: Path; resolved: string; what: string }[];
}
