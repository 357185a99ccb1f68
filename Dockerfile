# Drover worker image: a static binary, with git for the workspaces and bubblewrap,
# which contains the agents (README, "Sandbox"). Add your agent CLI in an image built
# FROM this one.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/drover ./cmd/drover

FROM debian:trixie-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends bubblewrap ca-certificates git \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/drover /usr/local/bin/drover
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/drover"]
CMD ["serve"]
