// Command fake-cri serves kubelet a CRI endpoint that "runs" every container in memory (k8s.io/cri-client's fake
// remote runtime), so that a real kubelet can admit and run pods on a machine without a container runtime.
package main

import (
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cri-client/pkg/fake"
)

func main() {
	endpoint := flag.String("endpoint", "", "unix:///path/to/cri.sock")
	flag.Parse()
	if *endpoint == "" {
		log.Fatal("fake-cri: -endpoint is required")
	}
	rt := fake.NewFakeRemoteRuntime()
	// kubelet refuses an image of size 0 ("Id or size of image is not set").
	rt.ImageService.SetFakeImageSize(1)
	if err := rt.Start(*endpoint); err != nil {
		log.Fatalf("fake-cri: %v", err)
	}
	log.Printf("fake-cri: serving %s", *endpoint)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
	rt.Stop()
}
