import * as net from "node:net";

export interface RawConnection {
  readonly socket: net.Socket;
  /** Everything the server sent so far. */
  received(): string;
  /** Resolves when the server closes the connection, with the ms since it was opened. */
  readonly closed: Promise<number>;
}

/** A plain TCP connection to the server, to send exactly the bytes a test means (partial bodies, say). */
export async function openRaw(port: number): Promise<RawConnection> {
  const socket = net.connect(port, "127.0.0.1");
  const openedAt = Date.now();
  let received = "";
  socket.on("data", (chunk: Buffer) => {
    received += chunk.toString("latin1");
  });
  socket.on("error", () => {}); // a refused or reset connection is what some tests expect
  const closed = new Promise<number>((resolve) => socket.once("close", () => resolve(Date.now() - openedAt)));
  // A refused connection may be reset before it reports being connected.
  await Promise.race([new Promise((resolve) => socket.once("connect", resolve)), closed]);
  return { socket, received: () => received, closed };
}
