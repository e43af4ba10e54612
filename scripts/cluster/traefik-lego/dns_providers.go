// Stands in for lego's providers/dns package in the Traefik build (build.sh, traefik_lego): the real
// node's Traefik routes plain HTTP on loopback and asks no ACME server for a certificate, and lego's
// DNS providers, each with its cloud's SDK, are over a third of the packages Traefik compiles. A DNS
// challenge configured anyway fails with this error at start-up.
package dns

import (
	"fmt"

	"github.com/go-acme/lego/v4/challenge"
)

// NewDNSChallengeProviderByName refuses every provider: none is built in.
func NewDNSChallengeProviderByName(name string) (challenge.Provider, error) {
	return nil, fmt.Errorf("DNS challenge provider %q: this Traefik is built without ACME DNS providers", name)
}
