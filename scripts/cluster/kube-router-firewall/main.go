// kube-router's firewall alone: its NetworkPolicy controller, started as kube-router's own Run starts
// it with --run-firewall and neither the router nor the Service proxy (pkg/cmd/kube-router.go). The
// real node runs nothing else of kube-router, and leaving the rest out of the build leaves out its BGP
// speaker, IPVS proxy and cloud SDKs: about a third of the compile. Flags are kube-router's own.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/cloudnativelabs/kube-router/v2/pkg/controllers/netpol"
	"github.com/cloudnativelabs/kube-router/v2/pkg/healthcheck"
	"github.com/cloudnativelabs/kube-router/v2/pkg/options"
	"github.com/spf13/pflag"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "%s\n", err)
		os.Exit(1)
	}
}

func run() error {
	klog.InitFlags(nil)
	config := options.NewKubeRouterConfig()
	config.AddFlags(pflag.CommandLine)
	pflag.Parse()
	if err := flag.Set("logtostderr", "true"); err != nil {
		return err
	}
	if err := flag.Set("v", config.VLevel); err != nil {
		return err
	}
	if config.RunRouter || config.RunServiceProxy || config.RunLoadBalancer || !config.RunFirewall {
		return fmt.Errorf("this build runs the firewall only: --run-firewall=true --run-router=false --run-service-proxy=false")
	}

	clientConfig, err := clientcmd.BuildConfigFromFlags(config.Master, config.Kubeconfig)
	if err != nil {
		return fmt.Errorf("failed to build configuration from CLI: %v", err)
	}
	client, err := kubernetes.NewForConfig(clientConfig)
	if err != nil {
		return fmt.Errorf("failed to create Kubernetes client: %v", err)
	}

	var ipsetMutex sync.Mutex
	var wg sync.WaitGroup
	healthChan := make(chan *healthcheck.ControllerHeartbeat, 10)
	stopCh := make(chan struct{})
	hc, err := healthcheck.NewHealthController(config)
	if err != nil {
		return fmt.Errorf("failed to create health controller: %v", err)
	}
	wg.Add(1)
	go hc.RunServer(stopCh, &wg)

	factory := informers.NewSharedInformerFactory(client, 0)
	podInformer := factory.Core().V1().Pods().Informer()
	nsInformer := factory.Core().V1().Namespaces().Informer()
	npInformer := factory.Networking().V1().NetworkPolicies().Informer()
	factory.Start(stopCh)
	synced := make(chan struct{})
	go func() { factory.WaitForCacheSync(stopCh); close(synced) }()
	select {
	case <-time.After(config.CacheSyncTimeout):
		return fmt.Errorf("%s timeout", config.CacheSyncTimeout)
	case <-synced:
	}
	hc.SetAlive()
	wg.Add(1)
	go hc.RunCheck(healthChan, stopCh, &wg)

	iptablesCmdHandlers, ipSetHandlers, err := netpol.NewIPTablesHandlers(config)
	if err != nil {
		return fmt.Errorf("failed to create iptables handlers: %v", err)
	}
	npc, err := netpol.NewNetworkPolicyController(client, config, podInformer, npInformer, nsInformer,
		&ipsetMutex, iptablesCmdHandlers, ipSetHandlers)
	if err != nil {
		return fmt.Errorf("failed to create network policy controller: %v", err)
	}
	for _, handler := range []struct {
		informer cache.SharedIndexInformer
		events   cache.ResourceEventHandler
	}{{podInformer, npc.PodEventHandler}, {nsInformer, npc.NamespaceEventHandler}, {npInformer, npc.NetworkPolicyEventHandler}} {
		if _, err := handler.informer.AddEventHandler(handler.events); err != nil {
			return fmt.Errorf("failed to add an event handler: %v", err)
		}
	}
	wg.Add(1)
	go npc.Run(healthChan, stopCh, &wg)

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	<-signals
	klog.Infof("Shutting down the controllers")
	close(stopCh)
	wg.Wait()
	return nil
}
