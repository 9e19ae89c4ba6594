# cuimg for GPU nodes: build on CUDA 13 devel, run on CUDA 13 runtime, non-root. The build uses the
# scripts CI uses (scripts/install_deps.sh, scripts/build.sh); the runtime stage gets only the
# binaries and the shared libraries they load (scripts/collect_libs.sh), with libnvjpeg and
# libnvjpeg2k, which the server loads at run time (scripts/copy_nvjpeg.sh).
#   docker build --build-arg CUIMG_GIT_COMMIT=$(git rev-parse --short=12 HEAD) -t cuimg .
# BUILD_IMAGE / RUNTIME_IMAGE pick other bases (another CUDA 13 release, a mirror); the build
# image needs nvcc in /usr/local/cuda/bin and apt-get.
ARG BUILD_IMAGE=nvidia/cuda:13.0.0-devel-ubuntu24.04
ARG RUNTIME_IMAGE=nvidia/cuda:13.0.0-runtime-ubuntu24.04

FROM ${BUILD_IMAGE} AS build
# NVIDIA's images put nvcc on PATH already; other bases with the toolkit in the usual place may not.
ENV PATH=/usr/local/cuda/bin:$PATH
WORKDIR /src
COPY scripts/install_deps.sh scripts/install_deps.sh
RUN bash scripts/install_deps.sh build
COPY . .
# .git stays out of the context (.dockerignore), so --version's commit comes from here.
ARG CUIMG_GIT_COMMIT=""
# Only the binaries the image ships (the server, its frame decoder helper, the client): the tools
# would add compile time and nothing else. build/ inside the sources, as on a host: a compiler
# cache mounted at /root/.cache/ccache (scripts/test_image.sh mounts a copy of CI's) then hits.
RUN CUIMG_BUILD_DIR=/src/build CUIMG_BUILD_TARGETS="cuimg-server cuimg-frame-decoder cuimg" bash scripts/build.sh \
      -DCUIMG_BUILD_TESTS=OFF -DCUIMG_BUILD_BENCHMARKS=OFF "-DCUIMG_GIT_COMMIT=${CUIMG_GIT_COMMIT}"
RUN mkdir -p /opt/cuimg/bin /opt/cuimg/share/cuimg \
 && cp build/server/cuimg-server build/codec/cuimg-frame-decoder build/client/cuimg /opt/cuimg/bin/ \
 && cp -r models /opt/cuimg/share/cuimg/models \
 && bash scripts/collect_libs.sh /opt/cuimg/lib /opt/cuimg/bin/cuimg-server /opt/cuimg/bin/cuimg-frame-decoder /opt/cuimg/bin/cuimg \
 && bash scripts/copy_nvjpeg.sh /opt/cuimg/lib

FROM ${RUNTIME_IMAGE} AS runtime
COPY --from=build /opt/cuimg /opt/cuimg
RUN useradd --system --uid 10001 --no-create-home cuimg
ENV PATH=/opt/cuimg/bin:$PATH
USER 10001
# 50051: gRPC (Imaging, grpc.health.v1, reflection; TLS when --tls_cert_file is given);
# 50052: plaintext grpc.health.v1 only, for health checks and probes that cannot do TLS or tokens;
# 9464: Prometheus /metrics.
EXPOSE 50051 50052 9464
# Against the health-only port, so it keeps working when 50051 needs TLS, client certificates or
# tokens (a check dialling 50051 in plaintext fails then). Keep --health_listen_address on 50052.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s \
  CMD ["cuimg", "--target=127.0.0.1:50052", "--timeout=2", "health"]
ENTRYPOINT ["cuimg-server", "--listen_address=0.0.0.0:50051", "--metrics_address=0.0.0.0:9464", \
            "--health_listen_address=0.0.0.0:50052"]
