// Package certs makes throwaway X.509 material for mutual TLS between
// holdfast nodes: a certificate authority and, for each node, a certificate
// whose subject alternative name (a DNS name) is the node name and that is
// valid for both server and client authentication.
//
// It serves tests and demos (NewCA, NodeCert, WriteFiles: in memory, valid
// for Validity) and the `holdfastctl cert` commands, which make a cluster's
// files (NewCAValid, LoadCA, Issue, with validities of their own). Keys are
// ECDSA P-256, generated in memory and never persisted unless the caller
// writes them. A cluster may as well get its certificates from its own PKI,
// with the same shape: a DNS SAN equal to the node name, and the extended
// key usages server auth and client auth.
package certs
