# Berth's container image: `berth serve` on port 8124, data in /data, as an unprivileged user.
#
# Where a registry is reachable:   docker build -t berth .
# With no registry (this repository's machines), first build local Node.js bases from the
# host's files (scripts/build-node-base-image.sh), then:
#   buildah bud --isolation chroot --format docker \
#     --build-arg NODE_IMAGE=localhost/berth/node:20 \
#     --build-arg NODE_BUILD_IMAGE=localhost/berth/node:20-build -t localhost/berth/berth .
# (`--format docker` keeps the HEALTHCHECK: the OCI image format has no field for it.)

# The runtime base needs only `node` and a shell; the build base also python3, make and g++,
# which node-gyp uses to compile better-sqlite3 (the official non-slim image has them).
ARG NODE_IMAGE=docker.io/library/node:20-bookworm-slim
ARG NODE_BUILD_IMAGE=docker.io/library/node:20-bookworm

# Production dependencies only. --ignore-scripts because the package's own `prepare` script
# runs the TypeScript build, and TypeScript is a dev dependency; the one native module is
# then compiled explicitly, from source so that no prebuilt binary is fetched from GitHub.
FROM ${NODE_BUILD_IMAGE} AS dependencies
WORKDIR /app
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm \
    npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && npm rebuild better-sqlite3 --build-from-source \
 && node -e "new (require('better-sqlite3'))(':memory:').close()"

# The compiled server (dist/). No native module is loaded by the compiler, so no compile here.
FROM ${NODE_BUILD_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm \
    npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.client.json ./
COPY scripts/build.mjs ./scripts/
COPY src ./src
RUN npm run build

FROM ${NODE_IMAGE}
# The young generation kept small, as `npm start` does (README: about 200 MB under load).
ENV NODE_ENV=production \
    NODE_OPTIONS=--max-semi-space-size=4 \
    HOST=0.0.0.0 \
    PORT=8124 \
    BERTH_DATA_DIR=/data
WORKDIR /app
COPY --from=dependencies /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY bin ./bin
# `berth` on PATH, as the Kubernetes manifests call it; a numeric user, so Kubernetes'
# runAsNonRoot can verify it without an /etc/passwd entry.
RUN mkdir -p /usr/local/bin /data && ln -s /app/bin/berth.js /usr/local/bin/berth \
 && chown 10001:10001 /data && chmod 0700 /data
USER 10001:10001
VOLUME ["/data"]
EXPOSE 8124
# No curl in a minimal image: node asks. Set PORT, not the health check, to move the port.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8124) + '/ok').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# `berth serve` by default; `berth engine` runs the engine alone.
ENTRYPOINT ["berth"]
CMD ["serve"]
