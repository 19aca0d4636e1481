#!/usr/bin/env bash
# Writes the TLS fixtures tests use (test/fixtures/tls): a test CA, two server certificates for
# localhost (the second to test reloading on SIGHUP), client certificates for mTLS, and one from an
# untrusted CA. Valid for 100 years, so the checked-in files do not expire. Never use them elsewhere.
set -euo pipefail
cd "$(dirname "$0")/../test/fixtures/tls"
days=36500
ec() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

ec ca-key.pem
openssl req -x509 -new -key ca-key.pem -out ca.pem -days $days -subj "/CN=wayfind test CA"
ec other-ca-key.pem
openssl req -x509 -new -key other-ca-key.pem -out other-ca.pem -days $days -subj "/CN=untrusted test CA"

# sign NAME CN SAN CA
sign() {
  ec "$1-key.pem"
  openssl req -new -key "$1-key.pem" -subj "/CN=$2" -out "$1.csr"
  printf 'subjectAltName=%s\n' "$3" >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$4.pem" -CAkey "$4-key.pem" -CAcreateserial -days $days \
    -extfile "$1.ext" -out "$1.pem" 2>/dev/null
  rm "$1.csr" "$1.ext"
}
sign server localhost "DNS:localhost,IP:127.0.0.1" ca
sign server-renewed localhost "DNS:localhost,IP:127.0.0.1" ca
sign client-agent agent-1 "URI:spiffe://acme/agent-1" ca
sign client-unmapped stranger "URI:spiffe://acme/stranger" ca
sign client-untrusted agent-1 "URI:spiffe://acme/agent-1" other-ca
rm -f ./*.srl other-ca-key.pem
