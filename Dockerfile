# Beatline server image.
#   docker build -t beatline .
#   docker run -p 8080:8080 -v beatline-data:/data beatline
#   docker run --rm -v beatline-data:/data beatline app create myapp
# A bind mount instead of a named volume must be writable by uid 10001
# (chown 10001:10001 ./data). scripts/docker-check builds and runs it with
# podman on a Debian machine without a registry.
FROM debian:bookworm AS build
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config libjansson-dev libxxhash-dev libzstd-dev zlib1g-dev \
      libmicrohttpd-dev libsqlite3-dev libsodium-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY cmake cmake
COPY server server
COPY schema schema
# the server alone: no instrumenter, Java runtime, tests or benchmarks
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release -DBEATLINE_SERVER_ONLY=ON \
    && cmake --build /build -j"$(nproc)" --target beatline-server beatline-retrace beatline-batch

FROM debian:bookworm-slim
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libjansson4 libxxhash0 libzstd1 zlib1g libmicrohttpd12 libsqlite3-0 libsodium23 \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin \
    && groupadd --system --gid 10001 beatline \
    && useradd --system --uid 10001 --gid beatline --home-dir /data --shell /usr/sbin/nologin beatline \
    && mkdir -p /data && chown beatline:beatline /data
COPY --from=build /build/bin/beatline-server /build/bin/beatline-retrace /build/bin/beatline-batch /usr/local/bin/
USER beatline
VOLUME /data
EXPOSE 8080
ENV BEATLINE_DATA=/data BEATLINE_LISTEN=0.0.0.0:8080
ENTRYPOINT ["/usr/local/bin/beatline-server"]
