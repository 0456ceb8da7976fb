package deploy_test

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// dockerfilePath is the ledger's image build, checked against the
// manifests and the module it builds.
const dockerfilePath = "../examples/ledger/Dockerfile"

// instructions returns each instruction of a Dockerfile's text with its
// arguments (continuation lines are not used in the file).
func instructions(raw string) [][2]string {
	var out [][2]string
	for _, line := range strings.Split(raw, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		op, args, _ := strings.Cut(line, " ")
		out = append(out, [2]string{strings.ToUpper(op), strings.TrimSpace(args)})
	}
	return out
}

// TestDockerfile checks the image the StatefulSet runs: the build stage
// uses the Go version of go.mod and builds a static examples/ledger; the
// image runs it as the non-root user the pod's securityContext names,
// and exposes the container's ports.
func TestDockerfile(t *testing.T) {
	raw, err := os.ReadFile(dockerfilePath)
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	if goVersion == nil {
		t.Fatal("../go.mod has no go directive")
	}
	m := loadManifests(t)
	pod := m.sets[0].Spec.Template.Spec
	c := ledgerContainer(t, m.sets[0])

	var froms, runs, exposed []string
	var user, entrypoint string
	for _, in := range instructions(string(raw)) {
		switch in[0] {
		case "FROM":
			froms = append(froms, in[1])
		case "RUN":
			runs = append(runs, in[1])
		case "USER":
			user = in[1]
		case "ENTRYPOINT":
			entrypoint = in[1]
		case "EXPOSE":
			exposed = append(exposed, strings.Fields(in[1])...)
		}
	}
	if len(froms) != 2 || !strings.HasPrefix(froms[0], "golang:"+string(goVersion[1])+" ") {
		t.Errorf("FROM %q: want two stages, the first golang:%s", froms, goVersion[1])
	}
	build := strings.Join(runs, "\n")
	for _, want := range []string{"CGO_ENABLED=0", "go build", "./examples/ledger"} {
		if !strings.Contains(build, want) {
			t.Errorf("no RUN contains %q", want)
		}
	}
	sc := pod.SecurityContext
	if sc == nil || sc.RunAsUser == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Fatalf("pod securityContext %+v: want runAsNonRoot and runAsUser", sc)
	}
	if wantUser := fmt.Sprintf("%d:%d", *sc.RunAsUser, *sc.RunAsUser); user != wantUser || *sc.RunAsUser == 0 {
		t.Errorf("USER %q, want %q (the pod's runAsUser, not root)", user, wantUser)
	}
	if entrypoint != `["/ledger"]` {
		t.Errorf("ENTRYPOINT %s, want [\"/ledger\"]: the container's args are the ledger's flags", entrypoint)
	}
	var ports []string
	for _, p := range c.Ports {
		ports = append(ports, fmt.Sprintf("%d/%s", p.ContainerPort, strings.ToLower(string(p.Protocol))))
	}
	slices.Sort(ports)
	slices.Sort(exposed)
	if !slices.Equal(ports, exposed) {
		t.Errorf("EXPOSE %v; container ports %v", exposed, ports)
	}
}
