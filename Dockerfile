# A container image with the spidx command line, for running shards of a matrix on a
# cluster (docs/experiments.md, "Many machines"). Build with scripts/docker-build, or:
#   docker build --build-arg SPIDX_GIT_COMMIT=$(git rev-parse HEAD) -t spidx .
# The build context leaves out .git (.dockerignore), so the commit every result records
# (runs.spidx_version, `spidx --version`) comes from this build argument; a build without
# it stops here rather than record "unknown".
FROM rust:1.88-bookworm AS build
ARG SPIDX_GIT_COMMIT
RUN test -n "$SPIDX_GIT_COMMIT" || { echo "give --build-arg SPIDX_GIT_COMMIT=\$(git rev-parse HEAD) (or use scripts/docker-build): results record the commit they were made by" >&2; exit 1; }
WORKDIR /src
COPY . .
RUN SPIDX_GIT_COMMIT="$SPIDX_GIT_COMMIT" cargo install --locked --path crates/spidx-cli --root /opt/spidx \
 && /opt/spidx/bin/spidx --version | grep -F "$SPIDX_GIT_COMMIT"

FROM debian:bookworm-slim
ARG SPIDX_GIT_COMMIT
LABEL org.opencontainers.image.revision=$SPIDX_GIT_COMMIT
COPY --from=build /opt/spidx/bin/spidx /usr/local/bin/spidx
WORKDIR /work
ENTRYPOINT ["spidx"]
