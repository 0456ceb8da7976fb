package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/holdfast-go/holdfast/admin"
	"github.com/holdfast-go/holdfast/coordinator"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole program; it returns the exit status: 0 after a graceful
// shutdown, 1 when the node could not start or stop cleanly, 2 for a bad
// command line.
func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, stop, o, &printer{w: stdout}, log); err != nil {
		fmt.Fprintln(stderr, "ledger:", err)
		return 1
	}
	return 0
}

// serve runs the node until ctx ends, then shuts it down gracefully. It
// calls unsignal once shutdown begins, so that a second signal kills the
// process.
func serve(ctx context.Context, unsignal func(), o options, out *printer, log *slog.Logger) error {
	if err := o.validate(); err != nil {
		return err
	}
	cfg := clusterConfig(o)
	if err := o.sec.checkFiles(o.node); err != nil {
		return err
	}
	if err := o.sec.apply(&cfg); err != nil {
		return err
	}
	httpTLS, err := o.sec.serverTLS()
	if err != nil {
		return err
	}
	logSettings(log, o, cfg)

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := newMetrics(reg)
	led, err := openLedger(ctx, o.db, o.node, reg)
	if err != nil {
		return err
	}
	defer led.close()
	// Bind the HTTP address first: a bad -http fails before joining.
	ln, err := net.Listen("tcp", o.http)
	if err != nil {
		return fmt.Errorf("-http: %w", err)
	}
	defer ln.Close()
	if httpTLS != nil {
		ln = tls.NewListener(ln, httpTLS)
	}

	workers := newWorkers(led, out, log, m, o.interval, o.checkBeforeWrite)
	workers.warmup = o.warmup
	cfg.Shards.Handler, cfg.Registerer, cfg.Logger = workers, reg, log
	c, err := coordinator.New(cfg)
	var fe *coordinator.ForeignClusterError
	if errors.As(err, &fe) {
		return fmt.Errorf("%w\nledger: to make this node leave cluster %s and join the -join seeds' cluster %s as a new node, "+
			"restart it with -leave-cluster %s (its raft state and identity are moved aside)", err, fe.Cluster, fe.SeedsCluster, fe.Cluster)
	}
	if err != nil {
		return flagError(err)
	}
	srv := startHTTP(ln, c, reg, o.sec.authorizeActions(httpTLS != nil))
	addrs := []any{"node", o.node, "gossip", c.GossipAddr(), "rpc", c.RPCAddr(), "http", ln.Addr()}
	out.say("listening", addrs...)
	readyDone := make(chan struct{})
	go func() { // "ready" only once the node is a member of a formed cluster with a session
		defer close(readyDone)
		if c.WaitReady(ctx) == nil {
			out.say("ready", addrs...)
		}
	}()
	defer func() { <-readyDone }()

	aud := startAuditor(c, led, out, log, m)
	stopChurn := startChurn(c, o, log)
	select {
	case <-ctx.Done():
		log.Info("shutting down", "leave", o.leaveOnTerminate)
	case <-c.Done(): // decommissioned through POST /v1/leave (holdfastctl leave)
		log.Info("the node left the cluster; exiting")
	}
	unsignal()
	stopChurn()
	return shutdown(cfg, o.leaveOnTerminate, c, aud, workers, srv, out)
}

// startHTTP serves /metrics and the admin endpoints on ln, with the
// actions (holdfastctl leave, drain, lease release, raft ...) that
// authorize allows.
func startHTTP(ln net.Listener, c *coordinator.Coordinator, reg *prometheus.Registry, authorize func(*http.Request) error) *http.Server {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	// /v1/status, /v1/shards, /v1/leases, /v1/semaphores, /healthz, /readyz; the POST actions
	mux.Handle("/", admin.New(c, admin.Options{Authorize: authorize}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return srv
}

// shutdown stops the auditor, then stops the node: with leave
// (-leave-on-terminate) it decommissions it (Leave: out of the raft
// configuration for good, a replacement promoted first), falling back to
// a plain Shutdown, which keeps its vote, when the leave is refused;
// otherwise Shutdown (a restart). Either hands the shards off (holdfast
// calls each shard's Release, which stops its worker, before the release
// is committed). It then stops any worker left and closes the HTTP server.
// A node already decommissioned through the admin endpoint only reports
// how its leave went.
func shutdown(cfg coordinator.Config, leave bool, c *coordinator.Coordinator, aud *auditor, workers *workers,
	srv *http.Server, out *printer) error {
	aud.stop()
	// Shutdown bounds the handoff by 2 × TTL + drain; leave room to leave,
	// and for a replacement voter to be promoted.
	budget := 2*cfg.Session.TTL + cfg.Shards.DrainTimeout + 4*cfg.RPCTimeout
	if leave {
		budget += cfg.Cluster.ServerStabilization + 2*cfg.Cluster.ReconcileInterval
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	left := false
	select {
	case <-c.Done():
		left = true // POST /v1/leave: Shutdown returns its result
	default:
	}
	var err error
	if leave && !left {
		if err = c.Leave(ctx, coordinator.LeaveOptions{}); err == nil {
			left = true
		} else if !isDone(c) { // refused before anything changed: stop keeping the vote
			err = errors.Join(fmt.Errorf("-leave-on-terminate: %w; stopped keeping the node's vote", err), c.Shutdown(ctx))
		}
	}
	if err == nil {
		err = c.Shutdown(ctx)
	}
	workers.close()
	hctx, hcancel := context.WithTimeout(context.Background(), time.Second)
	defer hcancel()
	_ = srv.Shutdown(hctx)
	if err != nil {
		return fmt.Errorf("graceful shutdown: %w", err)
	}
	if left {
		out.say("left", "node", cfg.NodeName)
	}
	out.say("stopped", "node", cfg.NodeName)
	return nil
}

// isDone reports whether c has stopped.
func isDone(c *coordinator.Coordinator) bool {
	select {
	case <-c.Done():
		return true
	default:
		return false
	}
}
