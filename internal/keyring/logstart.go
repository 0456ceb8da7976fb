package keyring

import "log/slog"

// LogStart logs how gossip starts: encrypted with keys (naming the
// primary by KeyID), or in clear text, warned about when the RPC port
// runs TLS (tls) and gossip alone is left open.
func LogStart(log *slog.Logger, keys [][]byte, tls bool) {
	switch {
	case len(keys) > 0:
		log.Info("gossip encrypted", "keys", len(keys), "primary", KeyID(keys[0]))
	case tls:
		log.Warn("gossip in clear text although TLS is on: anyone who reaches the gossip port can inject members and " +
			"suspicions (raft and leases stay protected by TLS); set Config.Gossip.Keys (holdfastctl cert create-ca writes gossip.key)")
	default:
		log.Info("gossip in clear text: set Config.Gossip.Keys to encrypt and authenticate it")
	}
}
