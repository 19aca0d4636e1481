# wayfind's container image: `wayfind serve` on one port (gRPC, gRPC-Web, Connect, /mcp and the
# console), with the shipped embedding model and the built console inside, as a non-root user, its
# data on a volume. docs/deployment.md has the commands.
#
#   docker build -t wayfind .                    # or: podman build --format docker -t wayfind .
#   npm run image                                # this repository's script (scripts/image.sh)
#
# NODE_IMAGE is the Node.js 22 image (Debian bookworm) both stages start from: the public one by
# default. Where no image registry can be reached, scripts/image.sh builds an equivalent from Debian
# packages and the npm registry and passes it here.
ARG NODE_IMAGE=docker.io/library/node:22-bookworm-slim

FROM ${NODE_IMAGE} AS build
# better-sqlite3 compiles from source where its prebuilt binary cannot be downloaded.
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# onnxruntime-node's install script fetches GPU libraries; its CPU binaries ship in the package.
# node-gyp takes the headers of the Node it runs on instead of downloading them.
ENV ONNXRUNTIME_NODE_INSTALL=skip \
  npm_config_nodedir=/usr/local \
  npm_config_update_notifier=false
# Dependencies first, so a change to the sources reuses this layer: every package as the lock file
# pins it, no install script but better-sqlite3's (the build below needs nothing else).
# A build secret `ca_certs` (a PEM bundle) is trusted too, for networks whose TLS to the npm
# registry passes a proxy with its own CA (scripts/image.sh passes $NODE_EXTRA_CA_CERTS).
COPY package.json package-lock.json .npmrc ./
RUN --mount=type=cache,target=/root/.npm --mount=type=secret,id=ca_certs \
  if [ -f /run/secrets/ca_certs ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/ca_certs; fi \
  && npm ci --ignore-scripts --no-audit --no-fund \
  && npm rebuild better-sqlite3
COPY bin/ bin/
COPY console/ console/
COPY gen/ts/ gen/ts/
COPY scripts/build.js scripts/console-build.js scripts/dist.js scripts/native.js scripts/tuning.js scripts/
COPY src/ src/
COPY tsconfig.json tsconfig.build.json ./
RUN npm run build \
  && npm prune --omit=dev --no-audit --no-fund \
  # What the server never loads: other platforms' ONNX Runtime, the SQLite compile's leftovers, the
  # bundler the build used, TypeScript's declaration files and source maps of dependencies.
  && arch=$(node -p process.arch) \
  && find node_modules/onnxruntime-node/bin -mindepth 2 -maxdepth 2 ! -name linux -exec rm -rf {} + \
  && find node_modules/onnxruntime-node/bin/*/linux -mindepth 1 -maxdepth 1 ! -name "$arch" -exec rm -rf {} + \
  && find node_modules/better-sqlite3/build -mindepth 1 -maxdepth 1 ! -name Release -exec rm -rf {} + \
  && find node_modules/better-sqlite3/build/Release -mindepth 1 ! -name better_sqlite3.node -exec rm -rf {} + \
  && rm -rf node_modules/better-sqlite3/deps node_modules/better-sqlite3/src \
    node_modules/esbuild node_modules/@esbuild \
  && find node_modules \( -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' -o -name '*.map' \) -type f -delete
# Names the build stage's own image (only its last step carries the label), which the build leaves
# untagged: scripts/image.sh removes it once the runtime image is made.
LABEL io.wayfind.stage=build

FROM ${NODE_IMAGE}
# No package manager at run time: the server needs Node alone.
RUN rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack /opt/yarn* /usr/local/include/node \
    /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack /usr/local/bin/yarn /usr/local/bin/yarnpkg \
  && groupadd --gid 10001 wayfind \
  && useradd --uid 10001 --gid wayfind --home-dir /var/lib/wayfind --no-create-home --shell /usr/sbin/nologin wayfind \
  && mkdir -p /var/lib/wayfind /etc/wayfind \
  && chown wayfind:wayfind /var/lib/wayfind
WORKDIR /opt/wayfind
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules/ node_modules/
COPY --from=build /src/dist/ dist/
# bin/wayfind.js tunes the process (scripts/tuning.js), then serves dist/: without the sources beside
# it (a packaged install: scripts/dist.js), there is nothing to check it against or fall back to.
COPY --from=build /src/bin/ bin/
COPY --from=build /src/scripts/dist.js /src/scripts/native.js /src/scripts/tuning.js scripts/
COPY models/ models/
COPY demo/ demo/
COPY LICENSE wayfind.example.yaml ./
RUN ln -s /opt/wayfind/bin/wayfind.js /usr/local/bin/wayfind

# Listen on every interface of the container; keep the state on the volume. A mounted config file
# is named with --config or WAYFIND_CONFIG (e.g. /etc/wayfind/wayfind.yaml); without one the demo
# catalog is served. Flags win over the environment, which wins over the file.
ENV NODE_ENV=production \
  WAYFIND_HOST=0.0.0.0 \
  WAYFIND_PORT=50051 \
  WAYFIND_DATA_DIR=/var/lib/wayfind
USER 10001:10001
VOLUME /var/lib/wayfind
EXPOSE 50051
# Plain HTTP on WAYFIND_PORT: with TLS on, or --port instead of WAYFIND_PORT, probe from outside.
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.WAYFIND_PORT}/healthz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["wayfind"]
CMD ["serve"]
