import { connect, createServer, type Socket } from "node:net";

/**
 * A TCP relay in front of a server (a replica's way to its PostgreSQL) that a test can cut, as a
 * network partition would for that one client, and restore.
 */
export interface CuttableLink {
  /** 127.0.0.1:<port> to connect to instead of the server. */
  readonly port: number;
  /** Drops every open connection and refuses new ones until `restore`. */
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function cuttableLink(targetPort: number): Promise<CuttableLink> {
  const sockets = new Set<Socket>();
  let cut = false;
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
  };
  const server = createServer((client) => {
    track(client);
    if (cut) {
      client.destroy();
      return;
    }
    const upstream = connect(targetPort, "127.0.0.1");
    track(upstream);
    client.pipe(upstream).pipe(client);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  return {
    port: address.port,
    cut() {
      cut = true;
      for (const socket of sockets) socket.destroy();
    },
    restore() {
      cut = false;
    },
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
