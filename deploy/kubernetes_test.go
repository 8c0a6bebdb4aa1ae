// Package deploy_test checks what deploy/ ships for running shardgate
// elsewhere: the Dockerfile at the repository's root, which builds the
// image, and the Kubernetes manifests under deploy/kubernetes that run it.
// No cluster and no container engine run here, so the tests build the
// image with the Dockerfile's own steps and render the manifests with
// kustomize's library, decode them strictly into the Kubernetes API
// types, and check what a cluster would otherwise reveal only at run time.
// (deploy/prometheus and deploy/grafana are checked in internal/proxy,
// against the metrics a proxy exports.)
package deploy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	kusttypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/testenv"
)

const kubeDir = "kubernetes"

func TestMain(m *testing.M) {
	code := testenv.Main(m)
	if image.dir != "" {
		os.RemoveAll(image.dir)
	}
	os.Exit(code)
}

// kinds are the objects the manifests may hold, by apiVersion and kind.
var kinds = map[string]func() any{
	"apps/v1 Deployment":                            func() any { return new(appsv1.Deployment) },
	"v1 Service":                                    func() any { return new(corev1.Service) },
	"v1 ConfigMap":                                  func() any { return new(corev1.ConfigMap) },
	"policy/v1 PodDisruptionBudget":                 func() any { return new(policyv1.PodDisruptionBudget) },
	"autoscaling/v2 HorizontalPodAutoscaler":        func() any { return new(autoscalingv2.HorizontalPodAutoscaler) },
	"kustomize.config.k8s.io/v1beta1 Kustomization": func() any { return new(kusttypes.Kustomization) },
}

// decodeStrict decodes one YAML document into the type its apiVersion and
// kind name: an unknown kind, an unknown or misspelt field, a duplicate
// key or a value of the wrong type is an error.
func decodeStrict(doc []byte) (any, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, err
	}
	newObj, ok := kinds[tm.APIVersion+" "+tm.Kind]
	if !ok {
		return nil, fmt.Errorf("apiVersion %q kind %q: not a kind these manifests use", tm.APIVersion, tm.Kind)
	}
	obj := newObj()
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return nil, fmt.Errorf("%s %s: %w", tm.APIVersion, tm.Kind, err)
	}
	return obj, nil
}

// documents splits a YAML stream into its documents.
func documents(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(stripComments(doc))) > 0 {
			docs = append(docs, doc)
		}
	}
}

func stripComments(doc []byte) []byte {
	var out []byte
	for line := range bytes.Lines(doc) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(out, line...)
		}
	}
	return out
}

// withoutPatchDirectives removes a strategic merge patch's directives
// ($patch, $setElementOrder/..., $retainKeys, ...), which are kustomize's
// instructions rather than fields, so that the rest decodes strictly.
func withoutPatchDirectives(doc []byte) ([]byte, error) {
	var v any
	if err := yaml.Unmarshal(doc, &v); err != nil {
		return nil, err
	}
	var strip func(any) any
	strip = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if strings.HasPrefix(k, "$") {
					delete(v, k)
					continue
				}
				v[k] = strip(e)
			}
		case []any:
			for i, e := range v {
				v[i] = strip(e)
			}
		}
		return v
	}
	return json.Marshal(strip(v))
}

// TestKubernetesManifestsDecode decodes every file under deploy/kubernetes
// strictly, and checks that each directory's kustomization lists every
// other file in it and that every file it lists exists.
func TestKubernetesManifestsDecode(t *testing.T) {
	listed := map[string]bool{} // files some kustomization names
	var files []string
	err := filepath.WalkDir(kubeDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files = append(files, p)
		if d.Name() != "kustomization.yaml" {
			return nil
		}
		k, err := readKustomization(p)
		if err != nil {
			t.Error(err)
			return nil
		}
		dir := filepath.Dir(p)
		refs := slices.Clone(k.Resources)
		for _, pt := range k.Patches {
			if pt.Path != "" {
				refs = append(refs, pt.Path)
			}
		}
		for _, ref := range refs {
			target := filepath.Join(dir, ref)
			fi, err := os.Stat(target)
			switch {
			case err != nil:
				t.Errorf("%s lists %s: %v", p, ref, err)
			case fi.IsDir():
				if _, err := os.Stat(filepath.Join(target, "kustomization.yaml")); err != nil {
					t.Errorf("%s lists the directory %s, which has no kustomization.yaml", p, ref)
				}
			default:
				listed[target] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no files under deploy/%s", kubeDir)
	}
	for _, f := range files {
		switch {
		case filepath.Ext(f) != ".yaml":
			t.Errorf("%s: only .yaml manifests belong under deploy/%s", f, kubeDir)
			continue
		case filepath.Base(f) != "kustomization.yaml" && !listed[f]:
			t.Errorf("%s is listed by no kustomization.yaml: kubectl apply -k would leave it out", f)
		}
		if err := decodeFile(f); err != nil {
			t.Error(err)
		}
	}
}

func readKustomization(file string) (*kusttypes.Kustomization, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	obj, err := decodeStrict(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	k, ok := obj.(*kusttypes.Kustomization)
	if !ok {
		return nil, fmt.Errorf("%s: not a Kustomization", file)
	}
	return k, nil
}

// decodeFile decodes each document of a manifest or patch file strictly.
func decodeFile(file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	docs, err := documents(data)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if len(docs) == 0 {
		return fmt.Errorf("%s: no document", file)
	}
	for i, doc := range docs {
		if doc, err = withoutPatchDirectives(doc); err == nil {
			_, err = decodeStrict(doc)
		}
		if err != nil {
			return fmt.Errorf("%s: document %d: %w", file, i+1, err)
		}
	}
	return nil
}

// fleet is what a kustomization renders to, decoded.
type fleet struct {
	deployment *appsv1.Deployment
	service    *corev1.Service
	pdb        *policyv1.PodDisruptionBudget
	hpa        *autoscalingv2.HorizontalPodAutoscaler
	configMaps map[string]*corev1.ConfigMap
}

// render builds a kustomization as `kubectl apply -k` would, with
// kustomize's own library, and decodes what it renders strictly.
func render(t *testing.T, dir string) *fleet {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	resources, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	out, err := resources.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	docs, err := documents(out)
	if err != nil {
		t.Fatal(err)
	}
	f := &fleet{configMaps: map[string]*corev1.ConfigMap{}}
	set := func(dst any, obj any) {
		d := reflect.ValueOf(dst).Elem()
		if !d.IsNil() {
			t.Fatalf("kustomize build %s: more than one %T", dir, obj)
		}
		d.Set(reflect.ValueOf(obj))
	}
	for _, doc := range docs {
		obj, err := decodeStrict(doc)
		if err != nil {
			t.Fatalf("kustomize build %s: %v\n%s", dir, err, doc)
		}
		switch o := obj.(type) {
		case *appsv1.Deployment:
			set(&f.deployment, o)
		case *corev1.Service:
			set(&f.service, o)
		case *policyv1.PodDisruptionBudget:
			set(&f.pdb, o)
		case *autoscalingv2.HorizontalPodAutoscaler:
			set(&f.hpa, o)
		case *corev1.ConfigMap:
			f.configMaps[o.Name] = o
		default:
			t.Fatalf("kustomize build %s: %T among the objects", dir, o)
		}
	}
	if f.deployment == nil || f.service == nil || f.pdb == nil || f.hpa == nil {
		t.Fatalf("kustomize build %s: want a Deployment, a Service, a PodDisruptionBudget and a HorizontalPodAutoscaler", dir)
	}
	return f
}

// TestKubernetesBase renders the base and checks it as a cluster would
// at run time, then runs its configuration through shardgate itself.
func TestKubernetesBase(t *testing.T) {
	f := render(t, filepath.Join(kubeDir, "base"))
	c := shardgateContainer(t, f.deployment)
	file, data := mountedConfig(t, f, c)
	cfg, err := config.Parse(data, file)
	if err != nil {
		t.Fatalf("the ConfigMap's %s does not pass shardgate's validation: %v", file, err)
	}
	checkFleet(t, f, cfg)

	img := theImage(t)
	checkArgs(t, img, c)
	// The binary's own check, as an operator runs it before applying.
	cfgFile := filepath.Join(t.TempDir(), filepath.Base(file))
	if err := os.WriteFile(cfgFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(img.binary, "check-config", cfgFile).CombinedOutput(); err != nil {
		t.Errorf("shardgate check-config on the ConfigMap's %s: %v\n%s", file, err, out)
	}
}

// TestKubernetesEtcdOverlay renders the etcd overlay: the proxies read
// etcd://HOST:PORT/PREFIX, and nothing refers to the ConfigMap it drops.
func TestKubernetesEtcdOverlay(t *testing.T) {
	base := render(t, filepath.Join(kubeDir, "base"))
	f := render(t, filepath.Join(kubeDir, "etcd"))
	if len(f.configMaps) > 0 {
		t.Errorf("the etcd overlay still ships ConfigMaps %v", slices.Collect(maps.Keys(f.configMaps)))
	}
	c := shardgateContainer(t, f.deployment)
	source := flagValue(c.Args, "--config")
	u, err := url.Parse(source)
	switch {
	case err != nil:
		t.Errorf("--config %q: %v", source, err)
	case u.Scheme != "etcd" || u.Port() == "" || u.Hostname() == "" || strings.Trim(u.Path, "/") == "":
		t.Errorf("--config %q: want etcd://HOST:PORT/PREFIX", source)
	}
	// etcd holds the document the base's ConfigMap holds: the ports, the
	// drain deadline and the probes must agree with it the same way.
	baseC := shardgateContainer(t, base.deployment)
	file, data := mountedConfig(t, base, baseC)
	cfg, err := config.Parse(data, file)
	if err != nil {
		t.Fatalf("the base ConfigMap's %s: %v", file, err)
	}
	checkFleet(t, f, cfg)
	checkArgs(t, theImage(t), c)
}

func shardgateContainer(t *testing.T, d *appsv1.Deployment) *corev1.Container {
	t.Helper()
	for i := range d.Spec.Template.Spec.Containers {
		if c := &d.Spec.Template.Spec.Containers[i]; c.Name == "shardgate" {
			return c
		}
	}
	t.Fatalf("Deployment %s has no container named shardgate", d.Name)
	return nil
}

// flagValue is the value of --name in args ("--name V" or "--name=V").
func flagValue(args []string, name string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// mountedConfig finds the file --config names in the container's mounts:
// a key of a ConfigMap the Deployment mounts, which the build ships.
func mountedConfig(t *testing.T, f *fleet, c *corev1.Container) (file string, data []byte) {
	t.Helper()
	file = flagValue(c.Args, "--config")
	if !path.IsAbs(file) {
		t.Fatalf("container args %q: want --config /PATH of the mounted ConfigMap", c.Args)
	}
	for _, m := range c.VolumeMounts {
		key, ok := strings.CutPrefix(file, strings.TrimSuffix(m.MountPath, "/")+"/")
		if !ok {
			continue
		}
		v := volume(f.deployment, m.Name)
		if v == nil || v.ConfigMap == nil {
			t.Fatalf("--config %s is on volume %q, which is not a ConfigMap", file, m.Name)
		}
		cm := f.configMaps[v.ConfigMap.Name]
		if cm == nil {
			t.Fatalf("volume %q mounts ConfigMap %q, which the manifests do not ship", m.Name, v.ConfigMap.Name)
		}
		content, ok := cm.Data[key]
		if !ok {
			t.Fatalf("--config %s: ConfigMap %s has no key %q (has %v)", file, cm.Name, key, slices.Collect(maps.Keys(cm.Data)))
		}
		return file, []byte(content)
	}
	t.Fatalf("--config %s is on no volume the container mounts", file)
	return "", nil
}

func volume(d *appsv1.Deployment, name string) *corev1.Volume {
	for i := range d.Spec.Template.Spec.Volumes {
		if v := &d.Spec.Template.Spec.Volumes[i]; v.Name == name {
			return v
		}
	}
	return nil
}

// checkFleet checks what the API server accepts but a running cluster
// would show to be wrong: selectors that match no pod, ports and volumes
// that are not there, a grace period that cuts the drain, a budget that
// blocks every eviction, an autoscaler with nothing to measure.
func checkFleet(t *testing.T, f *fleet, cfg *config.Config) {
	t.Helper()
	d := f.deployment
	pod := labels.Set(d.Spec.Template.Labels)
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || sel.Empty() || !sel.Matches(pod) {
		t.Errorf("Deployment %s: selector %v does not match its pod labels %v (%v)", d.Name, d.Spec.Selector, pod, err)
	}
	if s := labels.SelectorFromSet(f.service.Spec.Selector); len(f.service.Spec.Selector) == 0 || !s.Matches(pod) {
		t.Errorf("Service %s: selector %v does not match the pods %v: no endpoints", f.service.Name, f.service.Spec.Selector, pod)
	}
	if s, err := metav1.LabelSelectorAsSelector(f.pdb.Spec.Selector); err != nil || s.Empty() || !s.Matches(pod) {
		t.Errorf("PodDisruptionBudget %s: selector %v does not match the pods %v", f.pdb.Name, f.pdb.Spec.Selector, pod)
	}

	c := shardgateContainer(t, d)
	ports := map[string]corev1.ContainerPort{}
	for _, p := range c.Ports {
		ports[p.Name] = p
	}
	portOf := func(what string, p intstr.IntOrString) (corev1.ContainerPort, bool) {
		for _, cp := range c.Ports {
			if p.Type == intstr.String && cp.Name == p.StrVal || p.Type == intstr.Int && cp.ContainerPort == p.IntVal {
				return cp, true
			}
		}
		t.Errorf("%s: port %s is none of the container's ports %v", what, p.String(), c.Ports)
		return corev1.ContainerPort{}, false
	}
	for _, sp := range f.service.Spec.Ports {
		if cp, ok := portOf("Service "+f.service.Name+" port "+sp.Name, sp.TargetPort); ok && cp.Protocol != sp.Protocol {
			t.Errorf("Service port %s is %s, the container's %s is %s", sp.Name, sp.Protocol, cp.Name, cp.Protocol)
		}
	}

	// The configuration's listeners are the ports the container declares,
	// on every interface (the Service and the kubelet come from outside
	// the pod); and the container declares no port nothing listens on.
	listening := map[int32]string{}
	addListener := func(key, addr string) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			t.Errorf("%s %q: %v", key, addr, err)
			return
		}
		n, _ := strconv.Atoi(port)
		if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
			return // the pod's own loopback: no container port
		}
		if host != "" && host != "0.0.0.0" && host != "::" {
			t.Errorf("%s %q: listen on every interface (\":%s\"); the pod's address is not known in advance", key, addr, port)
		}
		listening[int32(n)] = key
	}
	for i, l := range cfg.Listeners {
		addListener(fmt.Sprintf("listeners[%d].address", i), l.Address)
	}
	if cfg.Admin.HTTP == "" {
		t.Error("admin.http is off: the probes have nothing to ask")
	} else {
		addListener("admin.http", cfg.Admin.HTTP)
	}
	if cfg.Admin.SQL != "" {
		addListener("admin.sql", cfg.Admin.SQL)
	}
	for n, key := range listening {
		if !slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool { return cp.ContainerPort == n }) {
			t.Errorf("%s listens on %d, which the container does not declare", key, n)
		}
	}
	for _, cp := range c.Ports {
		if _, ok := listening[cp.ContainerPort]; !ok {
			t.Errorf("container port %s (%d): shardgate's configuration listens on none such", cp.Name, cp.ContainerPort)
		}
	}
	_, adminPort, _ := net.SplitHostPort(cfg.Admin.HTTP)
	checkProbe := func(name string, p *corev1.Probe, wantPath string) {
		switch {
		case p == nil || p.HTTPGet == nil:
			t.Errorf("%s probe: want httpGet %s on the admin HTTP port", name, wantPath)
		case p.HTTPGet.Path != wantPath:
			t.Errorf("%s probe asks %s; want %s", name, p.HTTPGet.Path, wantPath)
		default:
			if cp, ok := portOf(name+" probe", p.HTTPGet.Port); ok && strconv.Itoa(int(cp.ContainerPort)) != adminPort {
				t.Errorf("%s probe asks port %d; admin.http is %s", name, cp.ContainerPort, cfg.Admin.HTTP)
			}
		}
	}
	checkProbe("readiness", c.ReadinessProbe, "/readyz")
	checkProbe("liveness", c.LivenessProbe, "/healthz")

	// The grace period counts from the preStop hook's start: it must hold
	// the sleep and then the whole drain, or the kubelet kills the drain.
	spec := d.Spec.Template.Spec
	var sleep int64
	switch {
	case c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil:
		t.Error("no preStop sleep: the pod would get SIGTERM while the Service still sends it clients")
	case c.Lifecycle.PreStop.Exec != nil:
		t.Error("preStop exec: the image has no shell")
	default:
		sleep = c.Lifecycle.PreStop.Sleep.Seconds
	}
	drain := int64(cfg.Server.ShutdownTimeout.Seconds())
	if grace := spec.TerminationGracePeriodSeconds; grace == nil || *grace <= sleep+drain {
		t.Errorf("terminationGracePeriodSeconds %s: want more than the preStop sleep (%d s) plus server.shutdown_timeout (%d s)",
			ptrString(grace), sleep, drain)
	}

	checkSecurity(t, &spec, c)
	checkVolumes(t, f, c)

	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, hasReq := c.Resources.Requests[r]
		lim, hasLim := c.Resources.Limits[r]
		if !hasReq || !hasLim || req.Cmp(lim) > 0 {
			t.Errorf("resources %s: request %v, limit %v: want both, request <= limit", r, req.String(), lim.String())
		}
	}

	// n+1: the budget lets one proxy go at a time and never blocks them all.
	replicas := int32(1)
	if d.Spec.Replicas != nil {
		replicas = *d.Spec.Replicas
	}
	hpa := f.hpa
	ref := hpa.Spec.ScaleTargetRef
	if ref.APIVersion != "apps/v1" || ref.Kind != "Deployment" || ref.Name != d.Name {
		t.Errorf("HorizontalPodAutoscaler %s scales %s %s %s, not the Deployment %s", hpa.Name, ref.APIVersion, ref.Kind, ref.Name, d.Name)
	}
	minReplicas := int32(1)
	if hpa.Spec.MinReplicas != nil {
		minReplicas = *hpa.Spec.MinReplicas
	}
	if hpa.Spec.MaxReplicas < minReplicas || minReplicas != replicas {
		t.Errorf("HorizontalPodAutoscaler replicas %d..%d; want minReplicas = the Deployment's %d", minReplicas, hpa.Spec.MaxReplicas, replicas)
	}
	for _, m := range hpa.Spec.Metrics {
		if m.Resource != nil && m.Resource.Name == corev1.ResourceCPU && m.Resource.Target.Type == autoscalingv2.UtilizationMetricType {
			if _, ok := c.Resources.Requests[corev1.ResourceCPU]; !ok {
				t.Error("the HorizontalPodAutoscaler's CPU utilization is a share of the CPU request, which the container does not set")
			}
		}
	}
	pdb := f.pdb.Spec
	switch {
	case pdb.MinAvailable == nil || pdb.MinAvailable.Type != intstr.Int:
		t.Errorf("PodDisruptionBudget: want minAvailable as a number of proxies, n of n+1")
	case pdb.MinAvailable.IntVal < 1 || pdb.MinAvailable.IntVal >= minReplicas:
		t.Errorf("PodDisruptionBudget minAvailable %d with %d replicas: want 1..%d, or no node drain can evict a proxy",
			pdb.MinAvailable.IntVal, minReplicas, minReplicas-1)
	}
}

func ptrString(p *int64) string {
	if p == nil {
		return "unset"
	}
	return strconv.FormatInt(*p, 10)
}

// checkSecurity: non-root (the image's numeric user), no privileges, a
// read-only root filesystem.
func checkSecurity(t *testing.T, spec *corev1.PodSpec, c *corev1.Container) {
	t.Helper()
	nonRoot := spec.SecurityContext != nil && spec.SecurityContext.RunAsNonRoot != nil && *spec.SecurityContext.RunAsNonRoot
	sc := c.SecurityContext
	if sc == nil {
		t.Fatal("the container has no securityContext")
	}
	if sc.RunAsNonRoot != nil {
		nonRoot = *sc.RunAsNonRoot
	}
	if !nonRoot {
		t.Error("runAsNonRoot is not set")
	}
	uid := sc.RunAsUser
	if uid == nil && spec.SecurityContext != nil {
		uid = spec.SecurityContext.RunAsUser
	}
	if uid != nil {
		df, err := parseDockerfile(filepath.Join(repoRoot, "Dockerfile"))
		if err != nil {
			t.Fatal(err)
		}
		user, _ := df.stages[len(df.stages)-1].last("USER")
		if imageUID, _, _ := strings.Cut(user.args, ":"); imageUID != strconv.FormatInt(*uid, 10) {
			t.Errorf("runAsUser %d; the image's USER is %s", *uid, user.args)
		}
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Error("readOnlyRootFilesystem is not set")
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("allowPrivilegeEscalation is not false")
	}
	if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
		t.Errorf("capabilities %v: want drop [ALL], add none", sc.Capabilities)
	}
	if len(c.Command) > 0 {
		t.Errorf("command %q replaces the image's ENTRYPOINT; set args only", c.Command)
	}
}

// checkVolumes: every mount names a volume of one source, every ConfigMap
// volume one the manifests ship, and /tmp is writable (merges spill
// there) though the root filesystem is not.
func checkVolumes(t *testing.T, f *fleet, c *corev1.Container) {
	t.Helper()
	for _, v := range f.deployment.Spec.Template.Spec.Volumes {
		if n := setFields(reflect.ValueOf(v.VolumeSource)); n != 1 {
			t.Errorf("volume %s has %d sources; want one", v.Name, n)
		}
		if v.ConfigMap != nil && f.configMaps[v.ConfigMap.Name] == nil && (v.ConfigMap.Optional == nil || !*v.ConfigMap.Optional) {
			t.Errorf("volume %s mounts ConfigMap %s, which the manifests do not ship: the pod would not start", v.Name, v.ConfigMap.Name)
		}
	}
	tmp := false
	for _, m := range c.VolumeMounts {
		v := volume(f.deployment, m.Name)
		if v == nil {
			t.Errorf("volumeMount %s: no volume %q", m.MountPath, m.Name)
			continue
		}
		if m.MountPath == "/tmp" && v.EmptyDir != nil && !m.ReadOnly {
			tmp = true
		}
	}
	if !tmp {
		t.Error("no writable emptyDir on /tmp: with a read-only root filesystem a merge cannot spill (schemas[].merge_overflow)")
	}
}

// setFields counts the non-nil pointer fields of a struct.
func setFields(v reflect.Value) int {
	n := 0
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			n++
		}
	}
	return n
}

// checkArgs: the image's ENTRYPOINT with the container's args is a
// command line the binary accepts. serve parses its flags before it does
// anything, and a --help after them ends it there with status 0, so an
// unknown flag or a missing value shows without starting a proxy.
func checkArgs(t *testing.T, img *builtImage, c *corev1.Container) {
	t.Helper()
	if len(c.Args) == 0 || c.Args[0] != "serve" {
		t.Fatalf("container args %q: want serve ...", c.Args)
	}
	// A last flag that wants a value would take --help as it and serve
	// would start: the deadline ends that as a failure.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := append(slices.Clone(c.Args), "--help")
	out, err := exec.CommandContext(ctx, img.binary, args...).CombinedOutput()
	if err != nil {
		t.Errorf("shardgate %s: %v: the binary does not accept the container's args\n%s", strings.Join(c.Args, " "), err, out)
	}
}

// TestKubernetesPortsMatchImage: the container ports are the ports the
// image declares (EXPOSE), so `docker run -P` and the Deployment agree.
func TestKubernetesPortsMatchImage(t *testing.T) {
	df, err := parseDockerfile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var exposed []string
	for _, in := range df.stages[len(df.stages)-1].all("EXPOSE") {
		for _, p := range strings.Fields(in.args) {
			exposed = append(exposed, strings.TrimSuffix(p, "/tcp"))
		}
	}
	c := shardgateContainer(t, render(t, filepath.Join(kubeDir, "base")).deployment)
	var declared []string
	for _, p := range c.Ports {
		declared = append(declared, strconv.Itoa(int(p.ContainerPort)))
	}
	slices.Sort(exposed)
	slices.Sort(declared)
	if !slices.Equal(exposed, declared) {
		t.Errorf("the Dockerfile EXPOSEs %v, the Deployment's container declares %v", exposed, declared)
	}
}
