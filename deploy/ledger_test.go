package deploy_test

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// ledgerBin is the examples/ledger binary that TestMain builds;
// holdfastctlBin is cmd/holdfastctl, which makes the certificates.
var ledgerBin, holdfastctlBin string

// TestMain builds the ledger from the parent module once for all tests,
// with the Dockerfile's settings.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "deploy-ledger")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ledgerBin = filepath.Join(dir, "ledger")
	// As the Dockerfile builds it: static, without cgo.
	build := exec.Command("go", "build", "-trimpath", "-o", ledgerBin, "./examples/ledger")
	build.Dir = ".."
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building examples/ledger: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	holdfastctlBin = filepath.Join(dir, "holdfastctl")
	build = exec.Command("go", "build", "-o", holdfastctlBin, "./cmd/holdfastctl")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building cmd/holdfastctl: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// podFields are the values the test gives the downward-API variables.
var podFields = map[string]string{
	"metadata.name":      "ledger-0",
	"metadata.namespace": "default",
	"status.podIP":       "10.1.2.3",
}

// varRef matches a Kubernetes $(VAR) reference in an argument.
var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expandArgs replaces every $(VAR) in c's args with the sample value of
// the downward-API field the variable is set from, as the kubelet does. A
// reference to a variable that c does not set from a field is an error:
// the kubelet would pass it through unexpanded.
func expandArgs(t *testing.T, c *corev1.Container) []string {
	t.Helper()
	fields := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			fields[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
	}
	out := make([]string, len(c.Args))
	for i, a := range c.Args {
		out[i] = varRef.ReplaceAllStringFunc(a, func(ref string) string {
			name := varRef.FindStringSubmatch(ref)[1]
			v, ok := podFields[fields[name]]
			if !ok {
				t.Errorf("arg %q: $(%s) is not set from a downward-API field the test knows", a, name)
			}
			return v
		})
	}
	return out
}

// ledgerFlags reads the ledger's flags from its -h output: the name of
// each flag, and whether it takes a value.
func ledgerFlags(t *testing.T) map[string]bool {
	t.Helper()
	cmd := exec.Command(ledgerBin, "-h")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("ledger -h: %v\n%s", err, stderr.String())
	}
	flagLine := regexp.MustCompile(`^  -([a-z][a-z0-9-]*)(?: (\S+))?$`)
	flags := map[string]bool{}
	for _, line := range strings.Split(stderr.String(), "\n") {
		if m := flagLine.FindStringSubmatch(line); m != nil {
			flags[m[1]] = m[2] != ""
		}
	}
	if len(flags) < 5 {
		t.Fatalf("ledger -h lists %d flags:\n%s", len(flags), stderr.String())
	}
	return flags
}

// parseLedgerArgs checks that args parse with the real ledger's flags (it
// runs the binary with args and -h: the flag package stops at the first
// bad argument, before -h), and returns the value of each flag given.
func parseLedgerArgs(t *testing.T, args []string) map[string]string {
	t.Helper()
	cmd := exec.Command(ledgerBin, append(append([]string{}, args...), "-h")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ledger %s -h: %v\n%s", strings.Join(args, " "), err, out)
	}
	fs := flag.NewFlagSet("ledger", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	for name, takesValue := range ledgerFlags(t) {
		if takesValue {
			fs.String(name, "", "")
		} else {
			fs.Bool(name, false, "")
		}
	}
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parsing %v: %v", args, err)
	}
	got := map[string]string{}
	fs.Visit(func(f *flag.Flag) { got[f.Name] = f.Value.String() })
	return got
}

// TestArgsCheckCanFail checks that parseLedgerArgs's use of the binary
// does refuse what the ledger refuses.
func TestArgsCheckCanFail(t *testing.T) {
	for _, args := range [][]string{{"-nope=1"}, {"-expect=three"}, {"-ttl=10"}} {
		out, err := exec.Command(ledgerBin, append(args, "-h")...).CombinedOutput()
		if err == nil {
			t.Errorf("ledger %v -h exited 0:\n%s", args, out)
		}
	}
}

// TestArgsWiring checks that the container's arguments parse with the
// ledger's own flags and agree with the rest of the manifest: the node
// name is the pod name; gossip and RPC bind the pod IP on the container's
// ports; -http binds the port the probes use; -join names the headless
// Service on the gossip port; -expect is the replica count; -data is the
// volume from volumeClaimTemplates; -db lies on the shared claim.
func TestArgsWiring(t *testing.T) {
	m := loadManifests(t)
	sts := m.sets[0]
	svc := headless(t, m)
	c := ledgerContainer(t, sts)
	args := parseLedgerArgs(t, expandArgs(t, c))
	t.Logf("ledger %v", args)

	wantEq := func(flag, want string) {
		t.Helper()
		if args[flag] != want {
			t.Errorf("-%s=%q, want %q", flag, args[flag], want)
		}
	}
	wantEq("node", podFields["metadata.name"])
	port := func(name string) string {
		p, ok := containerPort(c, name)
		if !ok {
			t.Errorf("no container port named %s", name)
		}
		return strconv.Itoa(int(p.ContainerPort))
	}
	wantEq("gossip", net.JoinHostPort(podFields["status.podIP"], port("gossip-tcp")))
	if port("gossip-udp") != port("gossip-tcp") {
		t.Errorf("gossip ports: UDP %s, TCP %s; memberlist uses one port for both", port("gossip-udp"), port("gossip-tcp"))
	}
	wantEq("rpc", net.JoinHostPort(podFields["status.podIP"], port("rpc")))
	if _, p, err := net.SplitHostPort(args["http"]); err != nil || p != port("http") {
		t.Errorf("-http=%q: want port %s", args["http"], port("http"))
	}
	dns := svc.Name + "." + podFields["metadata.namespace"] + ".svc.cluster.local"
	wantEq("join", net.JoinHostPort(dns, port("gossip-tcp")))
	wantEq("expect", strconv.Itoa(int(*sts.Spec.Replicas)))

	mounts := map[string]string{} // mount path → volume name
	for _, vm := range c.VolumeMounts {
		mounts[vm.MountPath] = vm.Name
	}
	claimed := map[string]bool{}
	for _, vct := range sts.Spec.VolumeClaimTemplates {
		claimed[vct.Name] = true
	}
	if !claimed[mounts[args["data"]]] {
		t.Errorf("-data=%s is not the mount of a volumeClaimTemplate (mounts %v)", args["data"], mounts)
	}
	shared := ""
	for _, v := range sts.Spec.Template.Spec.Volumes {
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == m.claims[0].Name {
			shared = v.Name
		}
	}
	if dir := filepath.Dir(args["db"]); shared == "" || mounts[dir] != shared {
		t.Errorf("-db=%s: its directory is not the mount of claim %s (mounts %v)", args["db"], m.claims[0].Name, mounts)
	}
}

// TestProbes checks that the probes use the -http port and paths that a
// real ledger serves: it runs the ledger with the manifest's arguments,
// made local (loopback addresses on free ports, no join, a one-node
// cluster, temporary files), and polls each probe's path until it
// answers 200.
func TestProbes(t *testing.T) {
	m := loadManifests(t)
	c := ledgerContainer(t, m.sets[0])
	for name, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if p == nil || p.HTTPGet == nil {
			t.Fatalf("%s probe: want an HTTP GET", name)
		}
		if p.HTTPGet.Port.String() != "http" {
			t.Errorf("%s probe port %q, want the container port named http", name, p.HTTPGet.Port.String())
		}
	}
	if c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("probes: readiness %s, liveness %s; want /readyz and /healthz",
			c.ReadinessProbe.HTTPGet.Path, c.LivenessProbe.HTTPGet.Path)
	}
	dir := t.TempDir()
	local := map[string]string{
		"gossip": "127.0.0.1:0", "rpc": "127.0.0.1:0", "http": "127.0.0.1:0",
		"expect": "1", "data": filepath.Join(dir, "data"), "db": filepath.Join(dir, "ledger.db"),
		"certs": makeCerts(t, filepath.Join(dir, "certs"), podFields["metadata.name"]),
	}
	var args []string
	for name, v := range parseLedgerArgs(t, expandArgs(t, c)) {
		if name == "join" {
			continue
		}
		if lv, ok := local[name]; ok {
			v = lv
		}
		args = append(args, "-"+name+"="+v)
	}
	addr := startLedger(t, args)
	for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
		waitOK(t, "http://"+addr+p.HTTPGet.Path)
	}
}

// readyLine matches the ledger's ready line on stdout.
var readyLine = regexp.MustCompile(`^ready .* http=(\S+)`)

// startLedger runs the ledger with args until the test ends (SIGTERM,
// then waits for it), and returns its HTTP address from its ready line.
func startLedger(t *testing.T, args []string) string {
	t.Helper()
	cmd := exec.Command(ledgerBin, args...)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := readyLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		<-drained
		if err := cmd.Wait(); err != nil {
			t.Errorf("ledger exit: %v\n%s", err, stderr.String())
		}
	})
	select {
	case a := <-addr:
		return a
	case <-drained:
		t.Fatalf("ledger %v exited before its ready line:\n%s", args, stderr.String())
	}
	return ""
}

// makeCerts makes the files of the manifest's certificate Secret in dir
// with the real holdfastctl cert commands, for the named nodes, and
// returns dir.
func makeCerts(t *testing.T, dir string, nodes ...string) string {
	t.Helper()
	run := func(args ...string) {
		out, err := exec.Command(holdfastctlBin, append([]string{"cert"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("holdfastctl cert %v: %v\n%s", args, err, out)
		}
	}
	run("create-ca", "-dir", dir)
	for _, n := range nodes {
		run("create-node", "-dir", dir, n)
	}
	return dir
}

// TestSecureByDefault checks that the manifest runs the ledger with TLS
// and gossip encryption: -certs is the read-only mount of a Secret
// volume, and -insecure is not given.
func TestSecureByDefault(t *testing.T) {
	m := loadManifests(t)
	sts := m.sets[0]
	c := ledgerContainer(t, sts)
	args := parseLedgerArgs(t, expandArgs(t, c))
	if v, ok := args["insecure"]; ok && v != "false" {
		t.Fatalf("-insecure=%s: the manifest must run with TLS", v)
	}
	dir, ok := args["certs"]
	if !ok {
		t.Fatal("no -certs: the ledger refuses to start without certificates")
	}
	var vol string
	for _, vm := range c.VolumeMounts {
		if vm.MountPath == dir {
			vol = vm.Name
			if !vm.ReadOnly {
				t.Errorf("mount %s of -certs is writable", dir)
			}
		}
	}
	for _, v := range sts.Spec.Template.Spec.Volumes {
		if v.Name == vol && v.Secret != nil && v.Secret.SecretName != "" {
			return
		}
	}
	t.Errorf("-certs=%s is not the mount of a Secret volume (mount %q)", dir, vol)
}
