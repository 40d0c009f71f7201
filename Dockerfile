# A container image with the spidx command line, for running shards of a matrix on a
# cluster (docs/experiments.md, "Many machines"). Build: docker build -t spidx .
FROM rust:1.88-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo install --locked --path crates/spidx-cli --root /opt/spidx

FROM debian:bookworm-slim
COPY --from=build /opt/spidx/bin/spidx /usr/local/bin/spidx
WORKDIR /work
ENTRYPOINT ["spidx"]
