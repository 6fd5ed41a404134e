// Package k8svalidate checks the Kubernetes manifests of deploy/kubernetes:
// the kustomize base and its overlay build (with kustomize's own library, as
// `kubectl apply -k` does), each object they give decodes strictly into the
// Kubernetes API types (an unknown or duplicated field is an error, as
// `kubectl apply --validate=strict` would say), and the example runs
// prepkey as the docs say. It
// is a module of its own so that k8s.io/api stays out of the sidecar's.
package k8svalidate

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

const dir = "../../deploy/kubernetes"

// The kustomizations a user applies: the base (the bundled Redis) and the
// overlay for their own shared Redis or MongoDB.
var kustomizations = []string{dir, dir + "/overlays/external-redis"}

// decoder decodes strictly: an unknown or duplicated field is an error.
func decoder(t *testing.T) runtime.Decoder {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}

// build runs kustomize on the kustomization in path (what `kubectl apply -k`
// does) and decodes every object it gives strictly.
func build(t *testing.T, fs filesys.FileSystem, path string) []runtime.Object {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, path)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", path, err)
	}
	out, err := m.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	return decodeDocs(t, path, out)
}

// decodeDocs decodes every document of a YAML stream strictly.
func decodeDocs(t *testing.T, name string, b []byte) []runtime.Object {
	t.Helper()
	dec := decoder(t)
	var objs []runtime.Object
	rd := utilyaml.NewYAMLReader(bufioReader(b))
	for i := 0; ; i++ {
		doc, err := rd.Read()
		if err != nil {
			break
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		obj, _, err := dec.Decode(doc, nil, nil)
		if err != nil {
			t.Errorf("%s document %d: %v", name, i, err)
			continue
		}
		objs = append(objs, obj)
	}
	return objs
}

// decodeAll is the base's objects, as `kubectl apply -k deploy/kubernetes`
// creates them.
func decodeAll(t *testing.T) []runtime.Object {
	t.Helper()
	return build(t, filesys.MakeFsOnDisk(), dir)
}

// TestKustomizationComplete: every manifest of deploy/kubernetes/base is in
// the base, so that none is left out of `kubectl apply -k`, and each one
// decodes strictly on its own too.
func TestKustomizationComplete(t *testing.T) {
	base := filepath.Join(dir, "base")
	files, err := filepath.Glob(filepath.Join(base, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s (%v)", base, err)
	}
	b, err := os.ReadFile(filepath.Join(base, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Resources  []string `json:"resources"`
	}
	if err := yaml.UnmarshalStrict(b, &k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	for _, f := range files {
		base := filepath.Base(f)
		if base == "kustomization.yaml" {
			continue
		}
		if !slices.Contains(k.Resources, base) {
			t.Errorf("%s is not in kustomization.yaml's resources", base)
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		decodeDocs(t, f, b)
	}
}

// TestStrictDecoding fails on a field the API does not know: it checks
// that the check itself refuses one.
func TestStrictDecoding(t *testing.T) {
	objs := decodeAll(t)
	if len(objs) < 2 {
		t.Fatalf("want the Deployment and the Secret, got %d objects", len(objs))
	}
	scheme := runtime.NewScheme()
	_ = appsv1.AddToScheme(scheme)
	decoder := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	bad := []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\nspec:\n  replicas: 1\n  replica: 2\n")
	if _, _, err := decoder.Decode(bad, nil, nil); err == nil || !strings.Contains(err.Error(), `unknown field "spec.replica"`) {
		t.Fatalf("strict decoding let an unknown field through: %v", err)
	}
}

// TestSidecar checks the example Deployment, in the base and in the
// overlay, against what the issue and docs/operations.md promise.
func TestSidecar(t *testing.T) {
	for _, k := range kustomizations {
		t.Run(filepath.Base(k), func(t *testing.T) {
			checkSidecar(t, build(t, filesys.MakeFsOnDisk(), k))
		})
	}
}

// appDeployment is the Deployment with the prepkey sidecar.
func appDeployment(objs []runtime.Object) *appsv1.Deployment {
	for _, o := range objs {
		if d, ok := o.(*appsv1.Deployment); ok && slices.ContainsFunc(d.Spec.Template.Spec.InitContainers,
			func(c corev1.Container) bool { return c.Name == "prepkey" }) {
			return d
		}
	}
	return nil
}

func secretsOf(objs []runtime.Object) map[string]*corev1.Secret {
	secrets := map[string]*corev1.Secret{}
	for _, o := range objs {
		if s, ok := o.(*corev1.Secret); ok {
			secrets[s.Name] = s
		}
	}
	return secrets
}

func checkSidecar(t *testing.T, objs []runtime.Object) {
	dep, secrets := appDeployment(objs), secretsOf(objs)
	if dep == nil {
		t.Fatal("no Deployment with prepkey as an init container (native sidecar)")
	}
	spec := dep.Spec.Template.Spec
	i := slices.IndexFunc(spec.InitContainers, func(c corev1.Container) bool { return c.Name == "prepkey" })
	if i < 0 {
		t.Fatal("prepkey is not an init container (native sidecar)")
	}
	c := spec.InitContainers[i]
	if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Error("the sidecar needs restartPolicy: Always")
	}
	probe := func(name string, p *corev1.Probe, path string) {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || p.HTTPGet.Port.String() != "admin" {
			t.Errorf("%s: want httpGet %s on the admin port, got %+v", name, path, p)
		}
	}
	probe("startupProbe", c.StartupProbe, "/healthz")
	probe("livenessProbe", c.LivenessProbe, "/healthz")
	probe("readinessProbe", c.ReadinessProbe, "/readyz")

	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if ref := env["PK_REQUIREPASS"].ValueFrom; ref == nil || ref.SecretKeyRef == nil {
		t.Error("PK_REQUIREPASS must come from a Secret")
	} else if s := secrets[ref.SecretKeyRef.Name]; s == nil || s.StringData[ref.SecretKeyRef.Key] == "" {
		t.Errorf("PK_REQUIREPASS: no Secret %s with key %s", ref.SecretKeyRef.Name, ref.SecretKeyRef.Key)
	}
	backend := env["PK_BACKEND"]
	url := backend.Value
	if ref := backend.ValueFrom; ref != nil && ref.SecretKeyRef != nil {
		if s := secrets[ref.SecretKeyRef.Name]; s != nil {
			url = s.StringData[ref.SecretKeyRef.Key]
		}
	}
	if !strings.HasPrefix(url, "redis://") && !strings.HasPrefix(url, "rediss://") {
		t.Errorf("PK_BACKEND must be a shared Redis, got %q", url)
	}
	if !strings.HasPrefix(env["PK_LISTEN"].Value, "127.0.0.1:") {
		t.Errorf("PK_LISTEN should be loopback in a pod, got %q", env["PK_LISTEN"].Value)
	}
	port := -1
	for _, p := range c.Ports {
		if p.Name == "admin" {
			port = int(p.ContainerPort)
		}
	}
	if !strings.HasSuffix(env["PK_ADMIN_LISTEN"].Value, ":"+itoa(port)) {
		t.Errorf("PK_ADMIN_LISTEN %q does not serve the admin port %d", env["PK_ADMIN_LISTEN"].Value, port)
	}

	checkContainers(t, objs)
}

// checkContainers: every container of every Deployment runs non-root on a
// read-only root filesystem, without privileges, with requests and a
// memory limit.
func checkContainers(t *testing.T, objs []runtime.Object) {
	var all []corev1.Container
	for _, o := range objs {
		if d, ok := o.(*appsv1.Deployment); ok {
			all = append(append(all, d.Spec.Template.Spec.InitContainers...), d.Spec.Template.Spec.Containers...)
		}
	}
	for _, ctr := range all {
		sc := ctr.SecurityContext
		switch {
		case sc == nil:
			t.Errorf("%s: no securityContext", ctr.Name)
			continue
		case sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot:
			t.Errorf("%s: runAsNonRoot", ctr.Name)
		case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
			t.Errorf("%s: readOnlyRootFilesystem", ctr.Name)
		case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
			t.Errorf("%s: allowPrivilegeEscalation must be false", ctr.Name)
		case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}):
			t.Errorf("%s: capabilities must drop ALL", ctr.Name)
		}
		if ctr.Resources.Requests.Memory().IsZero() || ctr.Resources.Limits.Memory().IsZero() || ctr.Resources.Requests.Cpu().IsZero() {
			t.Errorf("%s: requests (cpu, memory) and a memory limit are needed", ctr.Name)
		}
	}
}

// TestEnvNamesFlags: every PK_ variable the manifests set is one the
// sidecar reads (a flag of `sidecar --help`), so a typo cannot pass
// silently.
func TestEnvNamesFlags(t *testing.T) {
	cmd := exec.Command("go", "run", "./cmd/sidecar", "--help")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sidecar --help: %v", err)
	}
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+-([a-z-]+)`).FindAllStringSubmatch(string(out), -1) {
		flags["PK_"+strings.ToUpper(strings.ReplaceAll(m[1], "-", "_"))] = true
	}
	if !flags["PK_ADMIN_LISTEN"] {
		t.Fatalf("no --admin-listen in the help: %s", out)
	}
	var objs []runtime.Object
	for _, k := range kustomizations {
		objs = append(objs, build(t, filesys.MakeFsOnDisk(), k)...)
	}
	for _, o := range objs {
		dep, ok := o.(*appsv1.Deployment)
		if !ok {
			continue
		}
		for _, c := range dep.Spec.Template.Spec.InitContainers {
			for _, e := range c.Env {
				if strings.HasPrefix(e.Name, "PK_") && !flags[e.Name] {
					t.Errorf("%s: %s names no flag of the sidecar", c.Name, e.Name)
				}
			}
		}
	}
}
