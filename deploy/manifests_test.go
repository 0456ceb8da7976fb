package deploy_test

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// manifestPath is the file the tests check.
const manifestPath = "kubernetes/ledger.yaml"

// manifests are the objects of manifestPath, decoded.
type manifests struct {
	services []*corev1.Service
	claims   []*corev1.PersistentVolumeClaim
	budgets  []*policyv1.PodDisruptionBudget
	sets     []*appsv1.StatefulSet
}

// docSeparator splits a multi-document YAML stream.
var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// decodeManifests decodes every document of raw strictly into its API
// type: a field the type does not have, or a field given twice, is an
// error, as is a kind the tests do not know.
func decodeManifests(raw []byte) (manifests, error) {
	var m manifests
	for i, doc := range docSeparator.Split(string(raw), -1) {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			return m, fmt.Errorf("document %d: %w", i+1, err)
		}
		if tm.Kind == "" && strings.TrimSpace(stripComments(doc)) == "" {
			continue // only comments
		}
		var obj any
		switch tm.APIVersion + " " + tm.Kind {
		case "v1 Service":
			s := new(corev1.Service)
			m.services, obj = append(m.services, s), s
		case "v1 PersistentVolumeClaim":
			c := new(corev1.PersistentVolumeClaim)
			m.claims, obj = append(m.claims, c), c
		case "policy/v1 PodDisruptionBudget":
			b := new(policyv1.PodDisruptionBudget)
			m.budgets, obj = append(m.budgets, b), b
		case "apps/v1 StatefulSet":
			s := new(appsv1.StatefulSet)
			m.sets, obj = append(m.sets, s), s
		default:
			return m, fmt.Errorf("document %d: unexpected %q %q", i+1, tm.APIVersion, tm.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			return m, fmt.Errorf("document %d (%s): %w", i+1, tm.Kind, err)
		}
	}
	return m, nil
}

// stripComments drops YAML comment lines.
func stripComments(doc string) string {
	var b strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// loadManifests decodes manifestPath and checks it has the objects the
// other tests read: one StatefulSet, its PodDisruptionBudget, one claim.
func loadManifests(t *testing.T) manifests {
	t.Helper()
	raw, err := os.ReadFile(manifestPath)
	if err != nil {
		t.Fatal(err)
	}
	m, err := decodeManifests(raw)
	if err != nil {
		t.Fatalf("%s: %v", manifestPath, err)
	}
	if len(m.sets) != 1 || len(m.budgets) != 1 || len(m.claims) != 1 || len(m.services) != 2 {
		t.Fatalf("%s: %d StatefulSets, %d PodDisruptionBudgets, %d claims, %d Services; want 1, 1, 1, 2",
			manifestPath, len(m.sets), len(m.budgets), len(m.claims), len(m.services))
	}
	return m
}

// TestDecodeIsStrict checks that the decoding the tests rely on refuses
// what kubectl would refuse or silently drop: a misspelt field, a field
// given twice, an unknown kind.
func TestDecodeIsStrict(t *testing.T) {
	for name, doc := range map[string]string{
		"misspelt field": "apiVersion: apps/v1\nkind: StatefulSet\nspec:\n  replica: 3\n",
		"nested unknown": "apiVersion: v1\nkind: Service\nspec:\n  ports:\n    - prot: 80\n",
		"duplicate":      "apiVersion: v1\nkind: Service\nspec:\n  clusterIP: None\n  clusterIP: None\n",
		"unknown kind":   "apiVersion: v1\nkind: ConfigMap\n",
	} {
		if _, err := decodeManifests([]byte(doc)); err == nil {
			t.Errorf("%s: decoded without error", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	if _, err := decodeManifests([]byte("# only a comment\n---\napiVersion: v1\nkind: Service\n")); err != nil {
		t.Errorf("valid stream: %v", err)
	}
}

// TestManifestsDecode decodes the manifests strictly.
func TestManifestsDecode(t *testing.T) {
	m := loadManifests(t)
	t.Logf("%d Services, %d claims, %d budgets, %d StatefulSets",
		len(m.services), len(m.claims), len(m.budgets), len(m.sets))
}

// headless returns the StatefulSet's governing Service, which must be
// headless and publish pods that are not ready: a pod is ready only once
// the cluster is formed, and it cannot form before the pods find each
// other through this Service's DNS name.
func headless(t *testing.T, m manifests) *corev1.Service {
	t.Helper()
	sts := m.sets[0]
	for _, s := range m.services {
		if s.Name != sts.Spec.ServiceName {
			continue
		}
		if s.Spec.ClusterIP != corev1.ClusterIPNone {
			t.Errorf("Service %s: clusterIP %q, want None (headless: its DNS name resolves to every pod)", s.Name, s.Spec.ClusterIP)
		}
		if !s.Spec.PublishNotReadyAddresses {
			t.Errorf("Service %s: publishNotReadyAddresses is false: pods would not find each other before they are ready", s.Name)
		}
		return s
	}
	t.Fatalf("no Service named %q (the StatefulSet's serviceName)", sts.Spec.ServiceName)
	return nil
}

// TestSelectors checks that every Service, the budget and the
// StatefulSet's own selector pick the StatefulSet's pods.
func TestSelectors(t *testing.T) {
	m := loadManifests(t)
	sts := m.sets[0]
	headless(t, m)
	labels := sts.Spec.Template.Labels
	matches := func(sel map[string]string) bool {
		for k, v := range sel {
			if labels[k] != v {
				return false
			}
		}
		return len(sel) > 0
	}
	if sts.Spec.Selector == nil || !matches(sts.Spec.Selector.MatchLabels) {
		t.Errorf("StatefulSet selector %v does not match its pod labels %v", sts.Spec.Selector, labels)
	}
	for _, s := range m.services {
		if !matches(s.Spec.Selector) {
			t.Errorf("Service %s selector %v does not match the pod labels %v", s.Name, s.Spec.Selector, labels)
		}
	}
	b := m.budgets[0]
	if b.Spec.Selector == nil || !matches(b.Spec.Selector.MatchLabels) {
		t.Errorf("PodDisruptionBudget selector %v does not match the pod labels %v", b.Spec.Selector, labels)
	}
	if sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("podManagementPolicy %q: want Parallel (with OrderedReady the first pod waits to be ready, "+
			"which it cannot be before -expect pods have started)", sts.Spec.PodManagementPolicy)
	}
	// A majority of the voters must stay up: at most (n-1)/2 may go.
	replicas := int(*sts.Spec.Replicas)
	if mu := b.Spec.MaxUnavailable; mu == nil || mu.IntValue() != (replicas-1)/2 {
		t.Errorf("PodDisruptionBudget maxUnavailable %v, want %d for %d voters", mu, (replicas-1)/2, replicas)
	}
}

// TestServicePorts checks that every Service port targets a named
// container port with the same number and protocol.
func TestServicePorts(t *testing.T) {
	m := loadManifests(t)
	c := ledgerContainer(t, m.sets[0])
	for _, s := range m.services {
		for _, sp := range s.Spec.Ports {
			cp, ok := containerPort(c, sp.TargetPort.String())
			switch {
			case !ok:
				t.Errorf("Service %s port %s targets %q, which the container does not name", s.Name, sp.Name, sp.TargetPort.String())
			case cp.ContainerPort != sp.Port || cp.Protocol != sp.Protocol:
				t.Errorf("Service %s port %s is %d/%s; container port %s is %d/%s",
					s.Name, sp.Name, sp.Port, sp.Protocol, cp.Name, cp.ContainerPort, cp.Protocol)
			}
		}
	}
}

// ledgerContainer returns the StatefulSet's only container.
func ledgerContainer(t *testing.T, sts *appsv1.StatefulSet) *corev1.Container {
	t.Helper()
	cs := sts.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("StatefulSet %s has %d containers, want 1", sts.Name, len(cs))
	}
	return &cs[0]
}

// containerPort returns c's port named name.
func containerPort(c *corev1.Container, name string) (corev1.ContainerPort, bool) {
	for _, p := range c.Ports {
		if p.Name == name {
			return p, true
		}
	}
	return corev1.ContainerPort{}, false
}
