# Loom: a static binary on a distroless base, run as non-root.
#   docker build -t loom .
#   docker run -p 8080:8080 -v $PWD/models:/models:ro loom serve --host 0.0.0.0 -m /models/model.gguf
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Pure Go: no cgo, so the binary runs on an empty base image.
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/loom ./cmd/loom

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/loom /loom
USER nonroot:nonroot
EXPOSE 8080
# distroless has no shell or curl: the binary checks its own /health.
HEALTHCHECK --interval=15s --timeout=3s --start-period=60s --retries=3 CMD ["/loom", "health", "--url", "http://127.0.0.1:8080/health"]
ENTRYPOINT ["/loom"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8080", "-m", "/models/model.gguf"]
