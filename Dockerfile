# Builds the api, worker and paysim binaries; pick one with the target. make image
# passes VERSION (git describe) and REVISION; the binaries print it (version) and
# the images carry it in their OCI labels.
FROM golang:1.26-bookworm AS build
ARG VERSION=devel
WORKDIR /src
COPY go.mod go.sum ./
# kafka-go is replaced by the patched copy in third_party (see its README line).
COPY third_party/ third_party/
COPY client/go.mod client/go.sum client/
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath \
    -ldflags="-s -w -X github.com/orderflow/orderflow/platform/version.linked=${VERSION}" \
    -o /out/ ./cmd/api ./cmd/worker ./cmd/paysim

FROM gcr.io/distroless/static-debian12:nonroot AS base
ARG VERSION=devel
ARG REVISION=unknown
LABEL org.opencontainers.image.title="orderflow" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="https://github.com/orderflow/orderflow"
USER nonroot:nonroot

FROM base AS api
COPY --from=build /out/api /api
EXPOSE 8080 9091
ENTRYPOINT ["/api"]

FROM base AS worker
COPY --from=build /out/worker /worker
EXPOSE 9090
ENTRYPOINT ["/worker"]

FROM base AS paysim
COPY --from=build /out/paysim /paysim
EXPOSE 8099
ENTRYPOINT ["/paysim"]
