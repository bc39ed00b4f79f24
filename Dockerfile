# syntax=docker/dockerfile:1
# Rampart's images, built from this checkout (docker-compose.yml builds both):
#   target `server`: the control plane bundle (apps/server/dist) on Node.js 22 LTS, as user node
#   target `agent`:  the agent's self-contained .deb (its own Node.js under /usr/lib/rampart-agent/node)
# `docker compose up` runs them with PostgreSQL; README.md, "Containers".

# ---- build: every dependency, the bundles, the agent package; then only production dependencies
FROM node:22-bookworm-slim AS build
WORKDIR /src
COPY . .
RUN npm ci --no-audit --no-fund
# The server bundle, the console and the embedded-store template (dist/), and the agent's .deb
# (npm pack fetches its Node.js from the npm registry; dpkg-deb is part of Debian).
RUN node apps/server/scripts/build.mjs --force \
 && npm run package -w @rampart/agent -- --out /out \
 && npm prune --omit=dev --no-audit --no-fund

# ---- server: plain Node on the bundle; dependencies the bundle keeps external stay in node_modules
FROM node:22-bookworm-slim AS server
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8080 DATA_DIR=/var/lib/rampart
WORKDIR /app
COPY --from=build /src/package.json ./package.json
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/apps/server/package.json ./apps/server/package.json
COPY --from=build /src/apps/server/dist ./apps/server/dist
COPY --from=build /src/apps/server/migrations ./apps/server/migrations
COPY --from=build /src/apps/server/resources ./apps/server/resources
COPY docker/demo-key.sh ./docker/demo-key.sh
# DATA_DIR (the embedded store, when DATABASE_URL is not set) and the hand-over of the demo key to the agent.
RUN mkdir -p /var/lib/rampart /var/lib/rampart-bootstrap \
 && chown node:node /var/lib/rampart /var/lib/rampart-bootstrap \
 && chmod 0700 /var/lib/rampart
USER node
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:8080/readyz').then((r) => process.exit(r.status === 200 ? 0 : 1), () => process.exit(1))"]
# Node flags and malloc settings of the server as production runs it: apps/server/runtime.json.
ENV MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=131072 MALLOC_TRIM_THRESHOLD_=131072
CMD ["node", "--max-semi-space-size=2", "apps/server/dist/main.mjs"]

# ---- agent: the .deb installed as on a host (system user, /etc/rampart-agent, state directory)
FROM debian:bookworm-slim AS agent
COPY --from=build /out/ /tmp/rampart-agent-deb/
RUN apt-get update \
 && apt-get install -y --no-install-recommends /tmp/rampart-agent-deb/rampart-agent_*.deb \
 && rm -rf /var/lib/apt/lists/* /tmp/rampart-agent-deb
COPY docker/agent.compose.json /usr/local/share/rampart/agent.compose.json
COPY docker/agent-entrypoint.sh /usr/local/bin/rampart-agent-entrypoint
# Starts as root only to prepare its volumes and register once; the agent itself runs as
# rampart-agent with no capabilities (the dry-run enforcer changes no firewall).
ENTRYPOINT ["/usr/local/bin/rampart-agent-entrypoint"]
