// Package storehealth is the health of a node's raft storage (its log and
// stable store on disk), as the raft host tracks it and the facade reports
// it (Coordinator.Health, /v1/status).
package storehealth
