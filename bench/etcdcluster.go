package main

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// etcdCluster is n embedded etcd members in this process, on loopback,
// with their data in a temp dir (fsync on: etcd's default).
type etcdCluster struct {
	dir       string
	members   []*embed.Etcd
	endpoints []string
	reader    *clientv3.Client // the lookup's client, once loadShards ran
}

// freePorts reserves n loopback ports by listening on port 0, and frees
// them for etcd to bind (a small race another process could win).
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// etcdMemberConfig returns member i's config in a cluster of the given
// peer and client ports.
func etcdMemberConfig(dir string, i int, peer, client []int) *embed.Config {
	cfg := embed.NewConfig()
	cfg.Name = fmt.Sprintf("m%d", i)
	cfg.Dir = filepath.Join(dir, cfg.Name)
	pu := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", peer[i])}
	cu := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", client[i])}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{pu}, []url.URL{pu}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
	var initial []string
	for j := range peer {
		initial = append(initial, fmt.Sprintf("m%d=http://127.0.0.1:%d", j, peer[j]))
	}
	cfg.InitialCluster = strings.Join(initial, ",")
	cfg.InitialClusterToken = "holdfast-bench"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	return cfg
}

// startEtcd starts n members and waits until they serve clients.
func startEtcd(n int, timeout time.Duration) (*etcdCluster, error) {
	dir, err := os.MkdirTemp("", "etcd-bench-")
	if err != nil {
		return nil, err
	}
	ports, err := freePorts(2 * n)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	peer, client := ports[:n], ports[n:]
	e := &etcdCluster{dir: dir}
	for i := 0; i < n; i++ {
		m, err := embed.StartEtcd(etcdMemberConfig(dir, i, peer, client))
		if err != nil {
			e.close()
			return nil, fmt.Errorf("starting etcd member %d: %w", i, err)
		}
		e.members = append(e.members, m)
		e.endpoints = append(e.endpoints, fmt.Sprintf("127.0.0.1:%d", client[i]))
	}
	deadline := time.After(timeout)
	for i, m := range e.members {
		select {
		case <-m.Server.ReadyNotify():
		case err := <-m.Err():
			e.close()
			return nil, fmt.Errorf("etcd member %d: %w", i, err)
		case <-deadline:
			e.close()
			return nil, errors.New("etcd did not become ready")
		}
	}
	return e, nil
}

// client returns a new client of every member (the client balances
// requests over them, round robin).
func (e *etcdCluster) client() (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:   e.endpoints,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
}

func (e *etcdCluster) close() {
	if e.reader != nil {
		e.reader.Close()
	}
	for _, m := range e.members {
		m.Close()
	}
	os.RemoveAll(e.dir)
}
