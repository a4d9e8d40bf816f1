# kvplan in a container (docs/ci.md, "Container"): Debian 12 packages only.
#   docker build -t kvplan .
#   docker run --rm -v "$PWD:/work" -w /work kvplan check --baseline capacity.json
# The build stage compiles the portable binary (fmt, libstdc++ and libgcc
# linked in); the final image is Debian 12 slim with that binary alone.
FROM debian:12 AS build
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends cmake make g++ libcli11-dev nlohmann-json3-dev libfmt-dev \
 && rm -rf /var/lib/apt/lists/*
COPY . /src
RUN cmake -S /src -B /build -DCMAKE_BUILD_TYPE=Release -DKVPLAN_PORTABLE=ON -DKVPLAN_CUDA=OFF -DBUILD_TESTING=OFF \
 && cmake --build /build --target kvplan -j "$(nproc)" \
 && strip /build/kvplan

FROM debian:12-slim
COPY --from=build /build/kvplan /usr/local/bin/kvplan
ENTRYPOINT ["kvplan"]
CMD ["--help"]
