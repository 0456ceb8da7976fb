package main

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/holdfast-go/holdfast/coordinator"
)

// The ledger speaks of its flags, not of holdfast's Config fields: a
// *coordinator.ConfigError from New names a field ("Session.TTL") and
// says what is wrong in field names ("above
// Cluster.Voters (3)"); flagError rewrites both with the flags that set them.

// configFlags maps each Config field the ledger sets to its flag. A
// field set from another flag says so in parentheses (the lease margin is
// -ttl/10).
var configFlags = map[string]string{
	"NodeName":                "-node",
	"DataDir":                 "-data",
	"AllowRename":             "-allow-rename",
	"GossipAddr":              "-gossip",
	"RPCAddr":                 "-rpc",
	"AdvertiseGossipAddr":     "-advertise-gossip",
	"AdvertiseRPCAddr":        "-advertise-rpc",
	"Join":                    "-join",
	"Cluster.BootstrapExpect": "-expect",
	"Cluster.Voters":          "-voters",
	"Cluster.TokenFloor":      "-token-floor",
	"Cluster.LeaveCluster":    "-leave-cluster",
	"Shards.Count":            "-shards",
	"Shards.DrainTimeout":     "-drain",
	"Session.TTL":             "-ttl",
	"Session.LeaseMargin":     "-ttl (the lease margin is -ttl/10)",
	"Session.ExpiryGrace":     "-ttl (the expiry grace is -ttl/5)",
	"Raft.LogSegmentSize":     "-raft-segment-size",
	"TLS.CAFile":              "-ca",
	"TLS.CertFile":            "-cert",
	"TLS.KeyFile":             "-key",
	"TLS":                     "-certs",
	"Gossip.Keys":             "-gossip-key",
}

// fieldRef finds the Config field names a message mentions: a path
// ("Cluster.Voters", "Config.AllowRename") or a top-level field alone.
var fieldRef = regexp.MustCompile(`\b(?:Config\.)?(?:(?:Cluster|Session|Shards|Raft|TLS|Gossip)\.[A-Z][A-Za-z]*|` +
	`NodeName|DataDir|AllowRename|GossipAddr|RPCAddr|AdvertiseGossipAddr|AdvertiseRPCAddr|BootstrapExpect)\b`)

// flagError rewrites a configuration error of holdfast's New in the
// ledger's flags; any other error is returned as it is.
func flagError(err error) error {
	var ce *coordinator.ConfigError
	if !errors.As(err, &ce) {
		return err
	}
	field, _, _ := strings.Cut(ce.Field, "[") // Join[1]: the message quotes the address
	flag, ok := configFlags[field]
	if !ok {
		return err // a field the ledger does not set: holdfast's words are the only ones
	}
	msg := fieldRef.ReplaceAllStringFunc(ce.Msg, func(ref string) string {
		ref = strings.TrimPrefix(ref, "Config.")
		if ref == "BootstrapExpect" {
			ref = "Cluster.BootstrapExpect"
		}
		if f, ok := configFlags[ref]; ok {
			f, _, _ = strings.Cut(f, " ")
			return f
		}
		return ref
	})
	if strings.HasPrefix(msg, "is ") {
		return fmt.Errorf("%s %s", flag, msg)
	}
	return fmt.Errorf("%s: %s", flag, msg)
}
