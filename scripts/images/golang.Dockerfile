# The stand-in for golang:<v>-bookworm (a build stage's base, never published): the local Debian
# stand-in, ca-certificates, the machine's extra CA certificates (a TLS-intercepting proxy between
# the build and the Go module proxy) and Go from the module proxy's toolchain module. See build.sh.
ARG DEBIAN_IMAGE
FROM ${DEBIAN_IMAGE}
ARG GO_VERSION
ARG GOPROXY
ARG GOSUMDB
RUN apt-get update \
  && apt-get install -y --no-install-recommends ca-certificates git \
  && rm -rf /var/lib/apt/lists/*
COPY ca/ /usr/local/share/ca-certificates/
RUN update-ca-certificates
COPY go /usr/local/go
ENV GOLANG_VERSION=${GO_VERSION} GOTOOLCHAIN=local GOPATH=/go GOPROXY=${GOPROXY} GOSUMDB=${GOSUMDB} \
  PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
WORKDIR /go
