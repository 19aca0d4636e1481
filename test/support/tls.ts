import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as tls from "node:tls";

/** The test certificates (scripts/make-test-certs.sh): a CA, server and client certificates. */
export const TLS_FIXTURES = join(import.meta.dirname, "..", "fixtures", "tls");

/** The serial number of the certificate a new TLS connection to `port` is shown. */
export async function servedSerial(port: number): Promise<string> {
  const ca = readFileSync(join(TLS_FIXTURES, "ca.pem"));
  const socket = tls.connect({ host: "127.0.0.1", port, servername: "localhost", ca });
  await new Promise<void>((resolve, reject) => socket.once("secureConnect", resolve).once("error", reject));
  const serial = socket.getPeerCertificate().serialNumber;
  socket.destroy();
  return serial;
}
