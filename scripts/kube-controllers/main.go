// Command kube-controllers runs two controllers of kube-controller-manager v1.32 against an API
// server: clusterrole-aggregation (fills aggregated ClusterRoles such as kubeflow-edit) and the
// garbage collector (deletes the children of a deleted owner). The API-server test tier runs
// only kube-apiserver and etcd; kube-controller-manager's own command cannot be built from the
// Go module proxy, but these packages of k8s.io/kubernetes can, and they are the same code.
//
// Built by scripts/go-tools.sh; usage:
//
//	kube-controllers --kubeconfig FILE [--controllers clusterrole-aggregation,garbage-collector]
//	                 [--sync-period 30s] [--kube-api-qps 20] [--kube-api-burst 30]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	cacheddiscovery "k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/controller-manager/pkg/informerfactory"
	"k8s.io/kubernetes/pkg/controller/clusterroleaggregation"
	"k8s.io/kubernetes/pkg/controller/garbagecollector"
)

const (
	aggregation = "clusterrole-aggregation"
	collector   = "garbage-collector"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the API server (required)")
	// kube-controller-manager re-reads discovery every 30 s; a test wants a new CRD's objects
	// collected sooner.
	syncPeriod := flag.Duration("sync-period", 30*time.Second, "how often discovery is re-read")
	controllers := flag.String("controllers", aggregation+","+collector, "which controllers to run")
	// kube-controller-manager's flags and defaults; client-go's own (5 and 10) would leave the
	// garbage collector minutes behind on an API server holding thousands of orphans.
	qps := flag.Float64("kube-api-qps", 20, "requests per second to the API server")
	burst := flag.Int("kube-api-burst", 30, "requests allowed in a burst")
	flag.Parse()
	enabled := strings.Split(*controllers, ",")
	for _, name := range enabled {
		if name != aggregation && name != collector {
			fmt.Fprintf(os.Stderr, "kube-controllers: unknown controller %q\n", name)
			os.Exit(2)
		}
	}
	if err := run(*kubeconfig, *syncPeriod, enabled, float32(*qps), *burst); err != nil {
		fmt.Fprintln(os.Stderr, "kube-controllers:", err)
		os.Exit(1)
	}
}

func run(kubeconfig string, syncPeriod time.Duration, enabled []string, qps float32, burst int) error {
	if kubeconfig == "" {
		return fmt.Errorf("--kubeconfig is required")
	}
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	config.QPS, config.Burst = qps, burst
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	metadataClient, err := metadata.NewForConfig(config)
	if err != nil {
		return err
	}
	discoveryClient, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		return err
	}
	sharedInformers := informers.NewSharedInformerFactory(client, 0)
	metadataInformers := metadatainformer.NewSharedInformerFactory(metadataClient, 0)
	restMapper := restmapper.NewDeferredDiscoveryRESTMapper(cacheddiscovery.NewMemCacheClient(discoveryClient))
	go wait.Until(restMapper.Reset, syncPeriod, ctx.Done())

	// As kube-controller-manager wires them (cmd/kube-controller-manager/app/core.go, rbac.go).
	informersStarted := make(chan struct{})
	if slices.Contains(enabled, collector) {
		graphBuilder := garbagecollector.NewDependencyGraphBuilder(
			ctx, metadataClient, restMapper, garbagecollector.DefaultIgnoredResources(),
			informerfactory.NewInformerFactory(sharedInformers, metadataInformers), informersStarted,
		)
		gc, err := garbagecollector.NewComposedGarbageCollector(
			ctx, client, metadataClient, restMapper, graphBuilder,
		)
		if err != nil {
			return err
		}
		go gc.Run(ctx, 20, syncPeriod)
		go gc.Sync(ctx, discoveryClient, syncPeriod)
	}
	if slices.Contains(enabled, aggregation) {
		go clusterroleaggregation.NewClusterRoleAggregation(
			sharedInformers.Rbac().V1().ClusterRoles(), client.RbacV1(),
		).Run(ctx, 5)
	}

	sharedInformers.Start(ctx.Done())
	metadataInformers.Start(ctx.Done())
	close(informersStarted)
	fmt.Println("kube-controllers: running", strings.Join(enabled, " and "))
	<-ctx.Done()
	return nil
}
