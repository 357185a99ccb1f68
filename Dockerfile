# Drover worker image: a static binary on a small base.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/drover ./cmd/drover

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/
COPY --from=build /out/drover /usr/local/bin/drover
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/drover"]
CMD ["serve"]
