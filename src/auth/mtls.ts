import type { TLSSocket } from "node:tls";
import type { MtlsConfig } from "../config/index.ts";
import { unauthenticated } from "../errors.ts";
import { grantPrincipal, type Principal } from "./principal.ts";

/**
 * The verified client certificate's names, as the transport hands them to the call (JSON, URI-encoded).
 * The transport removes this header from every request and sets it only from the TLS session, so a
 * client can never send it.
 */
export const CLIENT_CERTIFICATE_HEADER = "wayfind-client-certificate";

interface CertificateNames {
  readonly cn: string;
  readonly uris: readonly string[];
}

const namesBySocket = new WeakMap<TLSSocket, string | undefined>();

/** The header value for a TLS connection: its certificate's names if it verified, else undefined. */
export function clientCertificateHeader(socket: TLSSocket): string | undefined {
  if (namesBySocket.has(socket)) return namesBySocket.get(socket);
  let value: string | undefined;
  if (socket.authorized) {
    const certificate = socket.getPeerCertificate();
    const cn = certificate.subject?.CN;
    const names: CertificateNames = {
      cn: Array.isArray(cn) ? (cn[0] ?? "") : (cn ?? ""),
      uris: (certificate.subjectaltname ?? "")
        .split(", ")
        .filter((entry) => entry.startsWith("URI:"))
        .map((entry) => entry.slice(4)),
    };
    value = encodeURIComponent(JSON.stringify(names));
  }
  namesBySocket.set(socket, value);
  return value;
}

/** The principal a verified client certificate maps to (`auth.mtls.principals`). */
export function certificatePrincipal(header: string, config: MtlsConfig): Principal {
  const names = JSON.parse(decodeURIComponent(header)) as CertificateNames;
  const candidates = config.principalFrom === "subject_cn" ? [names.cn] : names.uris;
  for (const name of candidates) {
    const grant = config.principals[name];
    if (grant) return grantPrincipal(`cert:${name}`, grant);
  }
  throw unauthenticated(
    `client certificate verified, but its ${config.principalFrom === "subject_cn" ? "subject CN" : "SAN URI"} is not one of auth.mtls.principals`,
  );
}
