package gometrics_test

import (
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	compat "github.com/hashicorp/go-metrics/compat"
	gmprom "github.com/hashicorp/go-metrics/compat/prometheus"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdfast-go/holdfast/coordinator"
	"github.com/holdfast-go/holdfast/holdfasttest"
)

// Example bridges raft's and memberlist's go-metrics into the
// application's registry, starts a single-node holdfast cluster that
// registers its own metrics on the same registry, and shows one metric of
// each source. The bridge is the first block: once per process, before the
// first coordinator starts.
func Example() {
	reg := prometheus.NewRegistry() // the application's registry

	sink, err := gmprom.NewPrometheusSinkFrom(gmprom.PrometheusOpts{
		Name:       "myapp_go_metrics_sink", // unique per registry
		Registerer: reg,
	})
	if err != nil {
		log.Fatal(err)
	}
	cfg := compat.DefaultConfig("myapp") // names become myapp_raft_…, myapp_memberlist_…
	cfg.EnableHostname = false           // else gauges are named myapp_<hostname>_…
	cfg.EnableRuntimeMetrics = false     // else a goroutine that never stops duplicates the Go collector
	if _, err := compat.NewGlobal(cfg, sink); err != nil {
		log.Fatal(err)
	}

	dir, err := os.MkdirTemp("", "holdfast-gometrics-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	c := coordinator.DefaultLocalConfig()
	c.NodeName, c.DataDir = "node0", dir
	c.Cluster.Voters, c.Cluster.BootstrapExpect = 1, 1
	c.Registerer = reg // holdfast's own metrics, on the same registry
	node, err := coordinator.New(c)
	if err != nil {
		log.Fatal(err)
	}
	defer node.Close()

	want := []string{"myapp_raft_state_leader", "myapp_memberlist_msg_alive", "holdfast_raft_leader"}
	var found map[string]string
	err = holdfasttest.Poll(2*time.Minute, func() error {
		if err := node.Ready(); err != nil {
			return err
		}
		found, err = describe(reg, want)
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, name := range want {
		fmt.Println(name, found[name])
	}
	// Output:
	// myapp_raft_state_leader counter
	// myapp_memberlist_msg_alive counter
	// holdfast_raft_leader gauge
}

// describe gathers reg and returns the type of each named family, or an
// error naming one that is missing.
func describe(reg prometheus.Gatherer, names []string) (map[string]string, error) {
	mfs, err := reg.Gather()
	if err != nil {
		return nil, err
	}
	types := map[string]string{}
	for _, mf := range mfs {
		types[mf.GetName()] = strings.ToLower(mf.GetType().String())
	}
	for _, name := range names {
		if _, ok := types[name]; !ok {
			return nil, fmt.Errorf("%s not gathered yet", name)
		}
	}
	return types, nil
}
