# Dockerfile — lmscored in a container: a build stage that compiles the daemon
# and the lmscore CLI and makes the demo model, and a runtime stage with only
# the shared libraries they load (tests/packaging/test_dockerfile.py checks the
# list against the binaries' NEEDED entries), run as a non-root user.
#   make image                       # podman build --format docker -t lmscore:0.1.0 .
#   docker run --rm -p 50051:50051 -p 9464:9464 lmscore:0.1.0   # gRPC, /metrics
# Serve another model: mount it and set LMSCORE_MODEL (see docs/deployment.md).
# Where TLS to the npm registry is intercepted, the build stage needs the
# proxy's CA: --build-arg EXTRA_CA_PEM="$(cat proxy-ca.pem)" (make image EXTRA_CA=FILE).

FROM debian:bookworm AS build
WORKDIR /src
# The dependency list first, so the package layer is cached across source edits.
# The plain run adds node/npm (the model maker fetches the pinned tokenizers).
COPY scripts/install-deps.sh scripts/install-deps.sh
RUN sh scripts/install-deps.sh && rm -rf /var/lib/apt/lists/*
ARG EXTRA_CA_PEM=""
RUN if [ -n "$EXTRA_CA_PEM" ]; then \
        printf '%s\n' "$EXTRA_CA_PEM" > /usr/local/share/ca-certificates/extra-ca.crt \
        && update-ca-certificates; \
    fi
ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
COPY . .
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DLMSCORE_BUILD_TESTS=OFF \
    && cmake --build build -j "$(nproc)" --target lmscored lmscore \
    && cmake --build build --target models

FROM debian:bookworm-slim AS runtime
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        libgomp1 \
        libgrpc29 \
        libjson-c5 \
        libpcre2-8-0 \
        libprotobuf-c1 \
        libssl3 \
        libsystemd0 \
        libutf8proc2 \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/*
RUN groupadd --system --gid 10001 lmscore \
    && useradd --system --uid 10001 --gid lmscore --no-create-home \
        --home-dir /nonexistent --shell /usr/sbin/nologin lmscore
COPY --from=build /src/build/service/lmscored /usr/bin/lmscored
COPY --from=build /src/build/clients/c/lmscore /usr/bin/lmscore
COPY --from=build /src/build/models/tiny-qwen3.gguf /usr/share/lmscore/models/tiny-qwen3.gguf
ENV LMSCORE_MODEL=/usr/share/lmscore/models/tiny-qwen3.gguf \
    LMSCORE_LISTEN=0.0.0.0:50051 \
    LMSCORE_METRICS_LISTEN=0.0.0.0:9464 \
    LMSCORE_HTTP_LISTEN=0.0.0.0:8080 \
    LMSCORE_TARGET=127.0.0.1:50051
# Numeric, so that Kubernetes' runAsNonRoot can verify it.
USER 10001:10001
# gRPC, Prometheus /metrics, and the HTTP JSON API
EXPOSE 50051 9464 8080
HEALTHCHECK --interval=10s --timeout=5s --start-period=120s --retries=3 \
    CMD ["/usr/bin/lmscore", "health", "--timeout", "3"]
ENTRYPOINT ["/usr/bin/lmscored"]
