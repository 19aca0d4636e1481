/** Where a command line's credential came from, as its error names it. */
export type CredentialSource = "--api-key" | "WAYFIND_API_KEY";

/**
 * What is wrong with a credential before it is sent, or undefined. An API key or token travels in an
 * HTTP header, which holds visible ASCII only: a pasted placeholder (`wf_…`), a space or a line
 * break would otherwise fail deep in the HTTP client with a message about byte strings. Never quotes
 * the credential itself (it may be a real secret with one stray character).
 */
export function credentialProblem(key: string, source: CredentialSource): string | undefined {
  const index = [...key].findIndex((char) => !/^[\x21-\x7e]$/.test(char));
  if (index < 0) return undefined;
  const char = [...key][index] ?? "";
  const what =
    char === "…"
      ? '"…" (the placeholder of the README\'s snippets?)'
      : /\s/.test(char)
        ? "a space or line break"
        : `"${char}" (U+${(char.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0")})`;
  return (
    `the API key in ${source} cannot be a key: character ${index + 1} of ${[...key].length} is ${what}; ` +
    'use the whole secret `wayfind keys create` printed (wf_ followed by letters, digits, "-" and "_") or a token'
  );
}
