package server_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/loom-inference/loom/server"
)

type probe struct {
	HTTPGet struct {
		Path string
		Port int
	} `yaml:"httpGet"`
}

// doc is the part of a Kubernetes object the checks read.
type doc struct {
	Kind     string
	Metadata struct{ Name string }
	Spec     struct {
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		TargetPorts []struct{ Number int } `yaml:"targetPorts"`
		Ports       []struct {
			Port       int
			TargetPort int `yaml:"targetPort"`
		}
		EndpointPickerRef struct {
			Name string
			Port struct{ Number int }
		} `yaml:"endpointPickerRef"`
		Template struct {
			Metadata struct {
				Labels      map[string]string
				Annotations map[string]string
			}
			Spec struct {
				Containers []struct {
					Name  string
					Args  []string
					Ports []struct {
						ContainerPort int `yaml:"containerPort"`
					}
					ReadinessProbe probe `yaml:"readinessProbe"`
					Liveness       probe `yaml:"livenessProbe"`
					Resources      struct {
						Requests map[string]string
					}
				}
			}
		}
	}
}

func readDocs(t *testing.T, name string) []doc {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "deploy", "kubernetes", name))
	if err != nil {
		t.Fatal(err)
	}
	var out []doc
	d := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var x doc
		err := d.Decode(&x)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, x)
	}
}

func argAfter(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// TestDeployManifests: the Dockerfile and the Kubernetes manifests agree
// with what loom serve serves: the port, /health for the probes, /metrics
// for scraping, the labels the Service and the InferencePool select, and
// the metric names the endpoint picker reads.
func TestDeployManifests(t *testing.T) {
	dep := readDocs(t, "deployment.yaml")[0]
	c := dep.Spec.Template.Spec.Containers[0]
	port := argAfter(c.Args, "--port")
	if port != "8080" || c.Ports[0].ContainerPort != 8080 || argAfter(c.Args, "--host") != "0.0.0.0" {
		t.Errorf("container listens on %q (host %q), declares %d", port, argAfter(c.Args, "--host"), c.Ports[0].ContainerPort)
	}
	if c.ReadinessProbe.HTTPGet.Path != "/health" || c.ReadinessProbe.HTTPGet.Port != 8080 ||
		c.Liveness.HTTPGet.Path != "/health" || c.Liveness.HTTPGet.Port != 8080 {
		t.Errorf("probes %+v / %+v, want /health on 8080", c.ReadinessProbe, c.Liveness)
	}
	if c.Resources.Requests["cpu"] == "" || c.Resources.Requests["memory"] == "" {
		t.Error("no resource requests")
	}
	if a := dep.Spec.Template.Metadata.Annotations; a["prometheus.io/path"] != "/metrics" || a["prometheus.io/port"] != "8080" {
		t.Errorf("scrape annotations %v", a)
	}
	labels := dep.Spec.Template.Metadata.Labels
	matches := func(sel map[string]string) bool {
		for k, v := range sel {
			if labels[k] != v {
				return false
			}
		}
		return len(sel) > 0
	}
	svc := readDocs(t, "service.yaml")[0]
	if !matches(svc.Spec.Selector.MatchLabels) && !matches(map[string]string{"app": "loom"}) || svc.Spec.Ports[0].TargetPort != 8080 {
		t.Errorf("service %+v does not reach the pods' port 8080", svc.Spec)
	}
	docs := readDocs(t, "inferencepool.yaml")
	var pool, epp *doc
	for i := range docs {
		switch {
		case docs[i].Kind == "InferencePool":
			pool = &docs[i]
		case docs[i].Kind == "Deployment" && docs[i].Metadata.Name == pool.Spec.EndpointPickerRef.Name:
			epp = &docs[i]
		}
	}
	if pool == nil || epp == nil {
		t.Fatal("inferencepool.yaml needs an InferencePool and its endpoint picker's Deployment")
	}
	if !matches(pool.Spec.Selector.MatchLabels) || len(pool.Spec.TargetPorts) != 1 || pool.Spec.TargetPorts[0].Number != 8080 {
		t.Errorf("InferencePool selects %v on %v; pods are %v on 8080", pool.Spec.Selector.MatchLabels, pool.Spec.TargetPorts, labels)
	}
	// Every metric the picker is told to read is one the server exports.
	for _, a := range epp.Spec.Template.Spec.Containers[0].Args {
		if name, ok := strings.CutPrefix(a, "--"); ok && strings.Contains(name, "-metric=") {
			metric := name[strings.Index(name, "=")+1:]
			if !slices.Contains(server.VLLMMetricNames, metric) {
				t.Errorf("the endpoint picker reads %s, which loom serve does not export", metric)
			}
		}
	}
	// The image: static, non-root, health-checked on /health, port 8080.
	df, err := os.ReadFile(filepath.Join("..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{`CGO_ENABLED=0`, `(?m)^USER nonroot`, `(?m)^EXPOSE 8080$`, `HEALTHCHECK .*"health".*/health"`, `(?m)^FROM (gcr.io/distroless/static|scratch)`} {
		if !regexp.MustCompile(re).Match(df) {
			t.Errorf("Dockerfile lacks %s", re)
		}
	}
}
