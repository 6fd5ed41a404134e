package k8svalidate

import (
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// backendURL is the URL the sidecar's PK_BACKEND names (from its Secret).
func backendURL(t *testing.T, objs []runtime.Object) *url.URL {
	t.Helper()
	dep := appDeployment(objs)
	if dep == nil {
		t.Fatal("no Deployment with the prepkey sidecar")
	}
	for _, c := range dep.Spec.Template.Spec.InitContainers {
		for _, e := range c.Env {
			if e.Name != "PK_BACKEND" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				continue
			}
			ref := e.ValueFrom.SecretKeyRef
			s := secretsOf(objs)[ref.Name]
			if s == nil {
				t.Fatalf("PK_BACKEND: no Secret %s", ref.Name)
			}
			u, err := url.Parse(s.StringData[ref.Key])
			if err != nil {
				t.Fatalf("PK_BACKEND: %v", err)
			}
			return u
		}
	}
	t.Fatal("PK_BACKEND does not come from a Secret")
	return nil
}

// TestBundledRedis: `kubectl apply -k deploy/kubernetes` gives a working
// example: a Redis behind a ClusterIP Service that the sidecar's backend
// URL names, with the password the URL holds, on a pinned image.
func TestBundledRedis(t *testing.T) {
	objs := decodeAll(t)
	var redis *appsv1.Deployment
	var svc *corev1.Service
	for _, o := range objs {
		switch v := o.(type) {
		case *appsv1.Deployment:
			if v.Name == "prepkey-redis" {
				redis = v
			}
		case *corev1.Service:
			if v.Name == "prepkey-redis" {
				svc = v
			}
		}
	}
	if redis == nil || svc == nil {
		t.Fatalf("want the Deployment and Service prepkey-redis, got %v and %v", redis != nil, svc != nil)
	}
	if svc.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Errorf("the Redis Service is %s, want ClusterIP: only the cluster reaches it", svc.Spec.Type)
	}
	pod := redis.Spec.Template
	for k, v := range svc.Spec.Selector {
		if pod.Labels[k] != v {
			t.Errorf("the Service selects %s=%s, the Redis pod has %q", k, v, pod.Labels[k])
		}
	}
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("want one Redis container, got %d", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	if !strings.HasPrefix(c.Image, "redis:") || !strings.Contains(c.Image, "@sha256:") {
		t.Errorf("the Redis image %q is not redis:tag@sha256:digest", c.Image)
	}
	if redis.Spec.Replicas == nil || *redis.Spec.Replicas != 1 {
		t.Error("the bundled Redis must be one replica: two would each hold part of the reservations")
	}

	u := backendURL(t, objs)
	if u.Scheme != "redis" || u.Hostname() != svc.Name {
		t.Errorf("PK_BACKEND is %s, want redis://…@%s", u.Redacted(), svc.Name)
	}
	var port *corev1.ServicePort
	for i, p := range svc.Spec.Ports {
		if u.Port() == itoa(int(p.Port)) {
			port = &svc.Spec.Ports[i]
		}
	}
	if port == nil {
		t.Fatalf("PK_BACKEND's port %s is not a port of the Service", u.Port())
	}
	target := -1
	for _, p := range c.Ports {
		if port.TargetPort == intstr.FromString(p.Name) || port.TargetPort == intstr.FromInt32(p.ContainerPort) {
			target = int(p.ContainerPort)
		}
	}
	if target != 6379 {
		t.Errorf("the Service's port %d reaches container port %d, want Redis's 6379", port.Port, target)
	}

	// The password in the URL is the one Redis requires.
	var passEnv string
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			ref := e.ValueFrom.SecretKeyRef
			if s := secretsOf(objs)[ref.Name]; s != nil {
				if pw, _ := u.User.Password(); pw == "" || pw != s.StringData[ref.Key] {
					t.Errorf("PK_BACKEND's password is not the Secret's %s, which Redis requires", ref.Key)
				}
				passEnv = e.Name
			}
		}
	}
	args := strings.Join(c.Args, " ")
	if passEnv == "" || !strings.Contains(args, "--requirepass $("+passEnv+")") {
		t.Errorf("Redis does not require the Secret's password: args %q", args)
	}
}

// TestExternalRedisOverlay: the overlay for a user's own Redis or MongoDB
// removes the bundled Redis and points the sidecar at the user's server;
// the rest is the base's.
func TestExternalRedisOverlay(t *testing.T) {
	objs := build(t, filesys.MakeFsOnDisk(), filepath.Join(dir, "overlays/external-redis"))
	for _, o := range objs {
		switch v := o.(type) {
		case *appsv1.Deployment:
			if v.Name == "prepkey-redis" {
				t.Error("the overlay keeps the bundled Redis Deployment")
			}
		case *corev1.Service:
			if v.Name == "prepkey-redis" {
				t.Error("the overlay keeps the bundled Redis Service")
			}
		case *corev1.Secret:
			if _, ok := v.StringData["redis-password"]; ok {
				t.Error("the overlay keeps the bundled Redis's password")
			}
		}
	}
	u := backendURL(t, objs)
	if u.Hostname() == "prepkey-redis" || u.Hostname() == "" {
		t.Errorf("the overlay's PK_BACKEND still names %q", u.Hostname())
	}
	if len(objs) != len(decodeAll(t))-2 {
		t.Errorf("the overlay gives %d objects, want the base's but the Redis Deployment and Service", len(objs))
	}
}
