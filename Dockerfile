# Beatline server image.
#   docker build -t beatline .
#   docker run -p 8080:8080 -v beatline-data:/data beatline
#   docker run --rm -v beatline-data:/data beatline app create myapp
# A bind mount instead of a named volume must be writable by uid 10001
# (chown 10001:10001 ./data). scripts/docker-check builds and runs it with
# podman on a Debian machine without a registry.
# Behind a TLS-intercepting proxy (npm ci fails with SELF_SIGNED_CERT_IN_CHAIN)
# lend the build the host's CA bundle, e.g.
#   podman build -v /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro -t beatline .
FROM debian:bookworm AS build
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config libjansson-dev libxxhash-dev libzstd-dev zlib1g-dev \
      libmicrohttpd-dev libsqlite3-dev libsodium-dev nodejs npm ca-certificates \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY cmake cmake
COPY server server
COPY schema schema
# the dashboard's sources (its npm packages come by npm ci, pinned by the lock file)
COPY web/package.json web/package-lock.json web/build.mjs web/CMakeLists.txt web/
COPY web/src web/src
COPY web/test web/test
# the server alone (no instrumenter, Java runtime, tests or benchmarks) and the dashboard
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release -DBEATLINE_SERVER_ONLY=ON -DBEATLINE_WEB=ON \
    && cmake --build /build -j"$(nproc)" --target beatline-server beatline-retrace beatline-batch beatline-web

FROM debian:bookworm-slim
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libjansson4 libxxhash0 libzstd1 zlib1g libmicrohttpd12 libsqlite3-0 libsodium23 \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin \
    && groupadd --system --gid 10001 beatline \
    && useradd --system --uid 10001 --gid beatline --home-dir /data --shell /usr/sbin/nologin beatline \
    && mkdir -p /data && chown beatline:beatline /data
COPY --from=build /build/bin/beatline-server /build/bin/beatline-retrace /build/bin/beatline-batch /usr/local/bin/
# served at / (the server's default: BIN/../share/beatline/web)
COPY --from=build /build/share/beatline/web /usr/local/share/beatline/web
USER beatline
VOLUME /data
EXPOSE 8080
ENV BEATLINE_DATA=/data BEATLINE_LISTEN=0.0.0.0:8080
ENTRYPOINT ["/usr/local/bin/beatline-server"]
