package subjects

import "strings"

// JSAPIPrefix is the prefix, with its trailing dot, of the JetStream API
// subjects of a client whose jetstream.JetStreamOptions have the given
// Domain and APIPrefix: the domain's, the API prefix, or "$JS.API.". The
// jetstream package computes it but does not export it, and two requests
// have no call there: the consumer's own pull (consumers/pull.go) and the
// cache's purge, whose answer counts what it removed.
func JSAPIPrefix(domain, apiPrefix string) string {
	switch {
	case domain != "":
		return "$JS." + domain + ".API."
	case apiPrefix != "":
		return strings.TrimSuffix(apiPrefix, ".") + "."
	}
	return "$JS.API."
}
