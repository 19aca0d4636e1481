import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import type * as http from "node:http";
import type * as http2 from "node:http2";
import { extname, join } from "node:path";
import { writeHead } from "../http-response.ts";

type Request = http.IncomingMessage | http2.Http2ServerRequest;
type Response = http.ServerResponse | http2.Http2ServerResponse;

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".map": "application/json; charset=utf-8",
  ".txt": "text/plain; charset=utf-8",
};

/**
 * The page may load only its own script and styles and call only this server: an injected script
 * or a framing site gets nowhere.
 */
const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

interface ConsoleFile {
  readonly body: Buffer;
  /** Compressed by the build (`<name>.gz`); undefined = sent as it is. */
  readonly gzipped: Buffer | undefined;
  readonly contentType: string;
  readonly etag: string;
}

/**
 * The web console's files (console/, bundled and compressed to dist/console by `npm run build`),
 * served at `GET /console` from memory: read once at start, so a request names an entry of a fixed
 * map and never a path on disk. Without a build, /console says how to make one.
 */
export class ConsoleFiles {
  private readonly files: ReadonlyMap<string, ConsoleFile>;

  constructor(directory: string) {
    const files = new Map<string, ConsoleFile>();
    if (existsSync(directory))
      for (const name of readdirSync(directory)) {
        const contentType = CONTENT_TYPES[extname(name)];
        if (contentType === undefined) continue;
        const body = readFileSync(join(directory, name));
        const etag = `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"`;
        const compressed = join(directory, `${name}.gz`);
        const gzipped = existsSync(compressed) ? readFileSync(compressed) : undefined;
        files.set(name, { body, gzipped, contentType, etag });
      }
    this.files = files;
  }

  /** True when it answered the request (a path under /console). */
  handles(request: Request, response: Response): boolean {
    const path = request.url?.split("?", 1)[0] ?? "";
    if (path !== "/console" && !path.startsWith("/console/")) return false;
    if (request.method !== "GET" && request.method !== "HEAD") {
      writeHead(response, 405, { allow: "GET, HEAD", "content-type": "text/plain; charset=utf-8" });
      response.end("the console answers GET or HEAD\n");
      return true;
    }
    const name = path === "/console" || path === "/console/" ? "index.html" : path.slice("/console/".length);
    const file = this.files.get(name);
    if (file === undefined) {
      const built = this.files.has("index.html");
      writeHead(response, built ? 404 : 503, { "content-type": "text/plain; charset=utf-8" });
      response.end(
        built ? `no console file ${name.slice(0, 100)}\n` : "the console is not built: run `npm run build`\n",
      );
      return true;
    }
    this.send(request, response, file);
    return true;
  }

  private send(request: Request, response: Response, file: ConsoleFile): void {
    const headers: Record<string, string> = {
      ...SECURITY_HEADERS,
      "content-type": file.contentType,
      etag: file.etag,
      // Revalidated on every load (a 304 when unchanged): a rebuilt console is never served stale.
      "cache-control": "no-cache",
      vary: "accept-encoding",
    };
    if (request.headers["if-none-match"] === file.etag) {
      writeHead(response, 304, headers);
      response.end();
      return;
    }
    const gzipped = /\bgzip\b/.test(String(request.headers["accept-encoding"] ?? ""))
      ? file.gzipped
      : undefined;
    const body = gzipped ?? file.body;
    writeHead(response, 200, {
      ...headers,
      ...(gzipped ? { "content-encoding": "gzip" } : {}),
      "content-length": String(body.length),
    });
    if (request.method === "HEAD") response.end();
    else response.end(body);
  }
}
